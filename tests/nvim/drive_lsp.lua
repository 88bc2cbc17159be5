-- Headless Neovim LSP driver for `kiwi lsp` (adapted from the shared reference driver).
-- Works with nvim 0.7.2 (Debian) and 0.11/0.12.
-- Extra env for kiwi:
--   LSP_EXEC_LENS  a lens title (e.g. "▶ Run"): execute that lens's command through
--                  workspace/executeCommand and record the result as `exec`
-- Usage:
--   LSP_CMD='["pylsp"]' LSP_FILE=sample.py LSP_POS=5:12 LSP_OUT=out.json \
--     nvim --headless -u /tmp/clients/nvim/drive_lsp.lua
-- Env:
--   LSP_CMD      JSON array: server command (stdio)             (required)
--   LSP_FILE     file to open                                    (required)
--   LSP_POS      0-based "line:character" for hover             (default 0:0)
--   LSP_OUT      write JSON result here (default: stdout)
--   LSP_TIMEOUT  ms to wait for init / diagnostics / requests    (default 10000)
--   LSP_ROOT     root_dir (default: dir of LSP_FILE)
--   LSP_NEED_DIAGS=0  don't fail if no diagnostics arrive
-- Exit code: 0 ok, 1 failure (timeout / no client).

local env = vim.env
local new_api = vim.fn.has('nvim-0.11') == 1 -- Client methods became ':'-style in 0.11
local function call(c, m, ...)
  if new_api then return c[m](c, ...) else return c[m](...) end
end
local timeout = tonumber(env.LSP_TIMEOUT or '10000')
local result = { nvim = tostring(vim.version().major) .. '.' .. vim.version().minor .. '.' .. vim.version().patch }
local raw_diags = {}
local log = {}

local function finish(code)
  local ok, txt = pcall(vim.json.encode, result)
  if not ok then txt = vim.inspect(result) end
  if env.LSP_OUT and env.LSP_OUT ~= '' then
    local f = assert(io.open(env.LSP_OUT, 'w'))
    f:write(txt, '\n')
    f:close()
  else
    io.stdout:write(txt, '\n')
  end
  -- stop clients politely (sends shutdown + exit), give them a moment
  for _, c in pairs((vim.lsp.get_clients or vim.lsp.get_active_clients)()) do
    call(c, 'stop')
  end
  vim.wait(1000, function()
    return #((vim.lsp.get_clients or vim.lsp.get_active_clients)()) == 0
  end, 50)
  if code == 0 then vim.cmd('qall!') else vim.cmd('cquit! ' .. code) end
end

local function main()
  local cmd = vim.json.decode((assert(env.LSP_CMD, 'LSP_CMD not set')))
  local file = vim.fn.fnamemodify((assert(env.LSP_FILE, 'LSP_FILE not set')), ':p')
  vim.cmd('edit ' .. vim.fn.fnameescape(file))
  local bufnr = vim.api.nvim_get_current_buf()
  local uri = vim.uri_from_bufnr(bufnr)

  local config = {
    name = 'drive',
    cmd = cmd,
    root_dir = env.LSP_ROOT or vim.fn.fnamemodify(file, ':h'),
    handlers = {
      ['textDocument/publishDiagnostics'] = function(err, res, ctx, cfg)
        if res and res.uri == uri then raw_diags = res.diagnostics end
        return vim.lsp.diagnostic.on_publish_diagnostics(err, res, ctx, cfg)
      end,
      ['window/logMessage'] = function(_, res) table.insert(log, res.message) end,
      ['window/showMessage'] = function(_, res) table.insert(log, res.message) end,
    },
  }

  local client_id
  if vim.lsp.start then -- 0.8+
    client_id = vim.lsp.start(config, { bufnr = bufnr })
  else -- 0.7
    client_id = vim.lsp.start_client(config)
    vim.lsp.buf_attach_client(bufnr, client_id)
  end
  result.client_id = client_id

  -- 1. wait for initialize to finish
  local inited = vim.wait(timeout, function()
    local c = vim.lsp.get_client_by_id(client_id)
    return c ~= nil and c.server_capabilities ~= nil and next(c.server_capabilities) ~= nil
  end, 20)
  if not inited then result.error = 'initialize timeout'; return finish(1) end
  local client = vim.lsp.get_client_by_id(client_id)
  result.server_name = client.server_info and client.server_info.name or nil
  result.capabilities = {
    hover = client.server_capabilities.hoverProvider and true or false,
    codeLens = client.server_capabilities.codeLensProvider and true or false,
  }

  -- 2. wait for diagnostics (server pushes them after didOpen)
  local got = vim.wait(timeout, function() return #raw_diags > 0 end, 20)
  result.diagnostics = raw_diags
  result.vim_diagnostics = vim.tbl_map(function(d)
    return { lnum = d.lnum, col = d.col, severity = d.severity, message = d.message, source = d.source }
  end, vim.diagnostic.get(bufnr))
  if not got and env.LSP_NEED_DIAGS ~= '0' then result.error = 'no diagnostics within timeout' end

  -- 3. hover
  local l, ch = (env.LSP_POS or '0:0'):match('(%d+):(%d+)')
  local pos_params = { textDocument = { uri = uri }, position = { line = tonumber(l), character = tonumber(ch) } }
  local function req(method, params)
    -- call the client directly: avoids buf_request's "method not supported" notify path
    local done, resp = false, nil
    local ok = call(client, 'request', method, params, function(err, res) done = true; resp = { err = err, result = res } end, bufnr)
    if not ok then return { error = 'request not sent' } end
    if not vim.wait(timeout, function() return done end, 10) then return { error = 'timeout' } end
    return resp
  end
  local h = req('textDocument/hover', pos_params)
  result.hover = h.result or h.err or h.error

  -- 4. code lenses (+ resolve those without a command, if server supports resolve)
  if result.capabilities.codeLens then
    local cl = req('textDocument/codeLens', { textDocument = { uri = uri } })
    local lenses = cl.result or {}
    local prov = client.server_capabilities.codeLensProvider
    if type(prov) == 'table' and prov.resolveProvider then
      for i, lens in ipairs(lenses) do
        if not lens.command then
          local r = req('codeLens/resolve', lens)
          if r.result then lenses[i] = r.result end
        end
      end
    end
    result.code_lenses = lenses
    if env.LSP_EXEC_LENS and env.LSP_EXEC_LENS ~= '' then
      for _, lens in ipairs(lenses) do
        if lens.command and lens.command.title == env.LSP_EXEC_LENS then
          local r = req('workspace/executeCommand', { command = lens.command.command, arguments = lens.command.arguments })
          result.exec = r.result or r.err or r.error
          break
        end
      end
      if result.exec == nil then result.error = 'no lens titled ' .. env.LSP_EXEC_LENS end
    end
  else
    result.code_lenses = vim.NIL
  end
  result.server_log = log
  return finish(result.error and 1 or 0)
end

vim.api.nvim_create_autocmd('VimEnter', {
  once = true,
  callback = function()
    local ok, err = pcall(main)
    if not ok then
      result.error = tostring(err)
      finish(1)
    end
  end,
})
