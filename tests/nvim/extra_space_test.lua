-- Run by tests/nvim/extra_space.sh: open a directive that calls a tool of an extra space and
-- check what the user sees (no K003 on that reference; its hover). Every wait is bounded.
local file = assert(vim.env.KIWI_FILE, 'KIWI_FILE not set')
local extra = assert(vim.env.KIWI_EXTRA, 'KIWI_EXTRA not set')
local ts_file = assert(vim.env.KIWI_TS_FILE, 'KIWI_TS_FILE not set')
local h = dofile(assert(vim.env.KIWI_HARNESS, 'KIWI_HARNESS not set'))
local out, check, timeout = h.out, h.check, h.timeout

-- The diagnostics of a buffer as `CODE message` strings.
local function diagnostics(bufnr)
  local seen = {}
  for _, d in ipairs(vim.diagnostic.get(bufnr)) do
    local code = d.code or (d.user_data and d.user_data.lsp and d.user_data.lsp.code)
    seen[#seen + 1] = tostring(code) .. ' ' .. d.message
  end
  return seen
end

local function any(list, pattern)
  for _, v in ipairs(list) do
    if v:find(pattern, 1, true) then
      return true
    end
  end
  return false
end

-- The hover's text at the first occurrence of `needle` (+ `plus` characters) in `buf`, once
-- the server answers one.
local function hover_at(buf, needle, plus)
  local row, col
  for i, line in ipairs(vim.api.nvim_buf_get_lines(buf, 0, -1, false)) do
    local s = line:find(needle, 1, true)
    if s and not row then
      row, col = i - 1, s - 1 + plus
    end
  end
  assert(row, needle .. ' not found')
  local text
  vim.wait(timeout, function()
    local res = vim.lsp.buf_request_sync(buf, 'textDocument/hover', {
      textDocument = { uri = vim.uri_from_bufnr(buf) },
      position = { line = row, character = col },
    }, 2000)
    for _, r in pairs(res or {}) do
      local contents = r.result and r.result.contents
      if contents then
        text = contents.value or vim.inspect(contents)
      end
    end
    return text ~= nil
  end, 100)
  return text
end

local function main()
  vim.cmd('edit ' .. vim.fn.fnameescape(file))
  local buf = vim.api.nvim_get_current_buf()
  -- The planted K003 on `missing/tool` says the file has been checked.
  vim.wait(timeout, function()
    return any(diagnostics(buf), 'missing/tool')
  end, 50)
  local d = diagnostics(buf)
  check('the file is checked (K003 on missing/tool)', any(d, 'missing/tool'), d)
  check('no diagnostic on shared/shout, a tool of the extra space', not any(d, 'shared/shout'), d)

  -- Hover on `shared/shout`, inside the id.
  local text = hover_at(buf, 'item_id="shared/shout"', #'item_id="s')
  for _, want in ipairs({ 'shared/shout', 'extra, read-only', extra .. '/.ai/tools/shared/shout.yaml' }) do
    check('hover shows ' .. want, text and text:find(want, 1, true) ~= nil, text)
  end

  -- Issue 27: renaming the extra space's tool from the call is refused, with kiwi's message
  -- shown, and nothing moves (neither its file nor the call's text).
  local notes = {}
  local notify = vim.notify
  vim.notify = function(msg, level)
    table.insert(notes, tostring(msg))
    out('     (notify) ' .. tostring(msg))
  end
  local before = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  local row
  for i, line in ipairs(before) do
    if line:find('item_id="shared/shout"', 1, true) then
      row = i
    end
  end
  vim.api.nvim_win_set_cursor(0, { row, before[row]:find('shared/shout', 1, true) + 2 })
  vim.lsp.buf.rename('shared/loud')
  vim.wait(timeout, function()
    return any(notes, 'read-only')
  end, 50)
  vim.notify = notify
  check('renaming an extra space\'s tool is refused with kiwi\'s message', any(notes, 'read-only'), notes)
  vim.wait(500)
  check('nothing moved: the tool\'s file is still there',
    vim.fn.filereadable(extra .. '/.ai/tools/shared/shout.yaml') == 1
      and vim.fn.filereadable(extra .. '/.ai/tools/shared/loud.yaml') == 0,
    vim.fn.glob(extra .. '/.ai/tools/shared/*', false, true))
  check('nothing changed in the directive', vim.deep_equal(before, vim.api.nvim_buf_get_lines(buf, 0, -1, false)))

  -- Issue 27: a file of the read-only space opened from the project is read in the project:
  -- its problems stay hints marked with the space (none in the error list), and its references
  -- resolve against the project (the project's node runtime), not the space on its own.
  vim.cmd('edit ' .. vim.fn.fnameescape(extra .. '/.ai/tools/shared/nodey.yaml'))
  local ro = vim.api.nvim_get_current_buf()
  local ro_hover = hover_at(ro, 'rye/core/runtimes/node/node', 5)
  check('hover in a read-only space\'s file resolves against the project (the project\'s runtime)',
    ro_hover and ro_hover:find('rye/core/primitives/subprocess', 1, true) ~= nil, ro_hover)
  vim.wait(timeout, function()
    return #vim.diagnostic.get(ro) > 0
  end, 50)
  vim.wait(500)
  local ro_diags = vim.tbl_map(function(d)
    return { severity = d.severity, message = d.message }
  end, vim.diagnostic.get(ro))
  local worst = #vim.diagnostic.get(ro, { severity = { min = vim.diagnostic.severity.INFO } })
  check('its diagnostics are hints marked read-only, none in the error list',
    #ro_diags > 0 and worst == 0 and ro_diags[1].message:find('read-only', 1, true) ~= nil, ro_diags)

  -- A TypeScript tool: the plugin starts the server for it; its executor's hover is the chain.
  vim.cmd('edit ' .. vim.fn.fnameescape(ts_file))
  local ts = vim.api.nvim_get_current_buf()
  local chain = hover_at(ts, '"rye/core/runtimes/node/node"', 5)
  local clients = (vim.lsp.get_clients or vim.lsp.get_active_clients)({ bufnr = ts })
  check('a .ts tool is a kiwi buffer', #clients > 0, vim.bo[ts].filetype)
  check('hover on a .ts tool\'s executor shows its chain',
    chain and chain:find('rye/core/primitives/subprocess', 1, true) ~= nil, chain)
end

h.finish(main)
