-- Run by tests/nvim/provenance.sh: open a pulled tool that changed since it was pulled and check
-- what the user sees (diagnostics R701 and R703; the first line's hover). Every wait is bounded.
local file = assert(vim.env.KIWI_FILE, 'KIWI_FILE not set')
local h = dofile(assert(vim.env.KIWI_HARNESS, 'KIWI_HARNESS not set'))
local out, check, timeout = h.out, h.check, h.timeout

local codes = h.codes

local function has(list, x)
  for _, v in ipairs(list) do
    if v == x then
      return true
    end
  end
  return false
end

local function main()
  vim.cmd('edit ' .. vim.fn.fnameescape(file))
  local buf = vim.api.nvim_get_current_buf()
  vim.wait(timeout, function()
    local c = codes(buf)
    return has(c, 'R701') and has(c, 'R703')
  end, 50)
  local c = codes(buf)
  check('R701: changed since it was pulled', has(c, 'R701'), c)
  check('R703: signed by a key this user does not trust', has(c, 'R703'), c)

  local text
  vim.wait(timeout, function()
    local res = vim.lsp.buf_request_sync(buf, 'textDocument/hover', {
      textDocument = { uri = vim.uri_from_bufnr(buf) },
      position = { line = 0, character = 2 },
    }, 2000)
    for _, r in pairs(res or {}) do
      local contents = r.result and r.result.contents
      if contents then
        text = contents.value or vim.inspect(contents)
      end
    end
    return text ~= nil
  end, 100)
  for _, want in ipairs({ 'file:///srv/registry.git', '1.2.0', 'a key you do not trust', 'lock drift' }) do
    check('hover shows ' .. want, text and text:find(want, 1, true) ~= nil, text)
  end
end

h.finish(main)
