-- Run by tests/nvim/refactor.sh on a copy of the demo: references, rename and formatting
-- through Neovim's own LSP functions, as a user calls them. Every wait is bounded.
local proj = assert(vim.env.KIWI_PROJECT, 'KIWI_PROJECT not set')
local h = dofile(assert(vim.env.KIWI_HARNESS, 'KIWI_HARNESS not set'))
local out, check, timeout = h.out, h.check, h.timeout

local function clients(bufnr)
  if vim.lsp.get_clients then
    return vim.lsp.get_clients({ bufnr = bufnr, name = 'kiwi' })
  end
  local found = {}
  for _, c in pairs(vim.lsp.buf_get_clients(bufnr)) do
    if c.name == 'kiwi' then
      table.insert(found, c)
    end
  end
  return found
end

local function open(rel)
  vim.cmd('edit ' .. vim.fn.fnameescape(proj .. '/' .. rel))
  local buf = vim.api.nvim_get_current_buf()
  vim.wait(timeout, function()
    return #clients(buf) > 0
  end, 50)
  -- Indexed: the diagnostics of the demo's planted mistakes arrive once the workspace is.
  vim.wait(timeout, function()
    return #vim.diagnostic.get(nil) > 0
  end, 50)
  return buf
end

-- The 0-based row and column of `needle` (+ delta) in the buffer.
local function find(buf, needle, delta)
  for i, l in ipairs(vim.api.nvim_buf_get_lines(buf, 0, -1, false)) do
    local col = l:find(needle, 1, true)
    if col then
      return i - 1, col - 1 + (delta or 0)
    end
  end
  error('no ' .. needle .. ' in ' .. vim.api.nvim_buf_get_name(buf))
end

local function text(buf)
  return table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), '\n')
end

local function main()
  -- 1. References of a tool, asked from its own file: the directive that calls it.
  open('.ai/tools/text/word_count.py')
  vim.api.nvim_win_set_cursor(0, { 1, 0 })
  vim.fn.setqflist({})
  vim.lsp.buf.references()
  vim.wait(timeout, function()
    return #vim.fn.getqflist() > 0
  end, 50)
  local files = {}
  for _, q in ipairs(vim.fn.getqflist()) do
    table.insert(files, vim.api.nvim_buf_get_name(q.bufnr) .. ':' .. q.lnum)
  end
  local callers = vim.tbl_filter(function(f)
    return f:find('directives/docs/summarize_docs.md', 1, true) ~= nil
  end, files)
  check('references (vim.lsp.buf.references) lists the directive calling text/word_count', #callers > 0, files)
  pcall(vim.cmd, 'cclose')

  -- 2. Rename the id from the call: every file naming it follows, the tool's file moves.
  local dir = open('.ai/directives/docs/summarize_docs.md')
  local row, col = find(dir, 'item_id="text/word_count"', #'item_id="text/')
  vim.api.nvim_win_set_cursor(0, { row + 1, col })
  vim.lsp.buf.rename('text/words')
  vim.wait(timeout, function()
    return text(dir):find('item_id="text/words"', 1, true) ~= nil
  end, 50)
  local t = text(dir)
  check('rename (vim.lsp.buf.rename) updates the call', t:find('item_id="text/words"', 1, true) ~= nil, t)
  check(
    'rename updates the permission naming the id',
    t:find('id="text/words"/>', 1, true) ~= nil and t:find('text/word_count', 1, true) == nil,
    t
  )
  local moved = vim.wait(timeout, function()
    return vim.fn.filereadable(proj .. '/.ai/tools/text/words.py') == 1
  end, 50)
  check(
    'rename moves the tool file to text/words.py',
    moved and vim.fn.filereadable(proj .. '/.ai/tools/text/word_count.py') == 0,
    vim.fn.glob(proj .. '/.ai/tools/text/*', false, true)
  )

  -- 3. Formatting: a badly indented step of a directive is indented again, nothing else changes.
  local csv = open('.ai/directives/data/csv_report.md')
  local before = vim.api.nvim_buf_get_lines(csv, 0, -1, false)
  local srow = find(csv, '<step name="tidy">')
  vim.api.nvim_buf_set_lines(csv, srow, srow + 1, false, { '<step name="tidy">' })
  if vim.lsp.buf.format then
    vim.lsp.buf.format({ bufnr = csv, timeout_ms = timeout })
  else
    vim.lsp.buf.formatting_sync(nil, timeout)
  end
  local after = vim.api.nvim_buf_get_lines(csv, 0, -1, false)
  check('format (vim.lsp.buf.format) indents the step again and changes nothing else', vim.deep_equal(before, after), {
    row = srow,
    line = after[srow + 1],
  })
end

h.finish(main)
