-- The kiwi language server's client configuration, shared by `require('kiwi').setup{}` and by
-- `lsp/kiwi.lua` (for `vim.lsp.config`/`vim.lsp.enable` users). Works on Neovim 0.7 to 0.12.
local M = {}

M.name = 'kiwi'
M.filetypes = { 'markdown', 'python', 'yaml', 'javascript', 'typescript', 'sh' }

--- VS Code's customization files the server checks on their own (issue 28, item 8; the
--- kernel's `copilot::SUFFIXES`).
M.customization_suffixes = { '.agent.md', '.chatmode.md', '.instructions.md', '.prompt.md' }

--- The absolute path of a buffer's file, or nil for buffers that are not files.
function M.buf_path(bufnr)
  if vim.bo[bufnr].buftype ~= '' then
    return nil
  end
  local name = vim.api.nvim_buf_get_name(bufnr)
  if name == '' or name:match('^%a[%w+.-]*://') then
    return nil
  end
  return vim.fn.fnamemodify(name, ':p')
end

--- The project root of a file under a `.ai/` folder: the folder that holds that `.ai/` (the
--- nearest one going up); or of a file in a project's skills folder (`.agents/skills/`,
--- `.claude/skills/`, `.github/skills/`: a project with Agent Skills and no `.ai/` is a
--- project), or in a folder of VS Code's customization files (`.github/agents/`,
--- `.github/instructions/`, `.github/prompts/`, `.github/chatmodes/`), the folder that holds
--- it, unless that is the home folder (the user's skills); of a project's `AGENTS.md`, the
--- nearest such project folder above it. A customization file elsewhere
--- (`*.agent.md`, `*.instructions.md`, `*.prompt.md`, `*.chatmode.md`): its own folder.
--- nil otherwise. `/` or `\`.
function M.root_of(path)
  if not path then
    return nil
  end
  local best, best_at
  local patterns = {
    '[/\\]%.ai[/\\]',
    '[/\\]%.agents[/\\]skills[/\\]',
    '[/\\]%.claude[/\\]skills[/\\]',
    '[/\\]%.github[/\\]skills[/\\]',
    '[/\\]%.github[/\\]agents[/\\]',
    '[/\\]%.github[/\\]chatmodes[/\\]',
    '[/\\]%.github[/\\]instructions[/\\]',
    '[/\\]%.github[/\\]prompts[/\\]',
  }
  local home = vim.loop.os_homedir()
  for i, pat in ipairs(patterns) do
    local from = 1
    while true do
      local s = path:find(pat, from)
      if not s then
        break
      end
      local root = path:sub(1, s - 1)
      if (i == 1 or root ~= home) and (best_at == nil or s > best_at) then
        best, best_at = root, s
      end
      from = s + 1
    end
  end
  if best == nil and (path:match('[^/\\]+$') or '') == 'AGENTS.md' then
    -- A project's `AGENTS.md` (the root one or a nested one) names its skills: the nearest
    -- folder above it that is a project (`.ai/`, or a skills folder), not the home folder.
    local dir = vim.fn.fnamemodify(path, ':h')
    while dir and dir ~= '' do
      if dir == home then
        break
      end
      local sep = dir:sub(-1) == '/' and '' or '/'
      for _, mark in ipairs({ '.ai', '.agents/skills', '.claude/skills', '.github/skills' }) do
        if vim.fn.isdirectory(dir .. sep .. mark) == 1 then
          best = dir
          break
        end
      end
      local up = vim.fn.fnamemodify(dir, ':h')
      if best ~= nil or up == dir then
        break
      end
      dir = up
    end
  end
  if best == nil then
    for _, suffix in ipairs(M.customization_suffixes) do
      local name = path:match('[^/\\]+$') or ''
      if #name > #suffix and name:sub(-#suffix) == suffix then
        best = path:sub(1, #path - #name - 1)
        break
      end
    end
  end
  if best == nil then
    return nil
  end
  if best == '' then
    return '/'
  end
  return best
end

--- The root of the running kiwi client whose project reads `path` from one of its read-only
--- spaces (an extra or system space): a file opened from that project (go to definition)
--- belongs to it, not to a server of its own on the space alone.
local function read_only_owner(path, root)
  local list = (vim.lsp.get_clients or vim.lsp.get_active_clients)({ name = M.name })
  for _, c in ipairs(list) do
    local stopped
    if vim.fn.has('nvim-0.11') == 1 then
      stopped = c:is_stopped()
    else
      stopped = c.is_stopped()
    end
    if not stopped and c.config.root_dir and c.config.root_dir ~= root then
      local ok, r = pcall(M.call_client, c, 'request_sync', 'workspace/executeCommand', {
        command = 'kiwi.readOnlyOwner',
        arguments = { { path = path } },
      }, 2000)
      local res = ok and type(r) == 'table' and r.result
      if type(res) == 'table' and res.root == c.config.root_dir then
        return res.root
      end
    end
  end
  return nil
end

--- The root for a buffer, only when it is a file of one of kiwi's filetypes under `.ai/`.
function M.buf_root(bufnr)
  if not vim.tbl_contains(M.filetypes, vim.bo[bufnr].filetype) then
    return nil
  end
  local path = M.buf_path(bufnr)
  local root = M.root_of(path)
  if root then
    return read_only_owner(path, root) or root
  end
  return root
end

local function call_client(client, method, ...)
  if vim.fn.has('nvim-0.11') == 1 then
    return client[method](client, ...)
  end
  return client[method](...)
end
M.call_client = call_client

--- Refresh the code lenses of one buffer with the API this Neovim has.
function M.refresh_lenses(bufnr)
  if not vim.api.nvim_buf_is_valid(bufnr) or not vim.api.nvim_buf_is_loaded(bufnr) then
    return
  end
  local cl = vim.lsp.codelens
  if cl.enable ~= nil then
    -- Newer Neovim (none released up to the 0.12-dev tested here) replace refresh() with
    -- enable(), which keeps a buffer's lenses fresh by itself; calling it again is harmless.
    cl.enable(true, { bufnr = bufnr })
  elseif vim.fn.has('nvim-0.10') == 1 then
    cl.refresh({ bufnr = bufnr })
  elseif bufnr == vim.api.nvim_get_current_buf() then
    -- Before 0.10, refresh() works on the current buffer, and its handler draws the answer
    -- on a buffer that may be gone by then (a rename that moves the file wipes it: Neovim 0.7
    -- printed "Invalid buffer id"): asked here, the answer is dropped for a gone buffer.
    local params = { textDocument = vim.lsp.util.make_text_document_params() }
    vim.lsp.buf_request(bufnr, 'textDocument/codeLens', params, function(err, result, ctx, cfg)
      if not vim.api.nvim_buf_is_valid(ctx.bufnr) then
        return
      end
      return cl.on_codelens(err, result, ctx, cfg)
    end)
  end
end

--- Buffers a client is attached to.
function M.client_buffers(client)
  local out = {}
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(b) and vim.lsp.buf_is_attached(b, client.id) then
      table.insert(out, b)
    end
  end
  return out
end

local augroup = vim.api.nvim_create_augroup('kiwi_lenses', { clear = true })

--- Called for each buffer the client attaches to: code lenses follow the buffer.
local function attach_lenses(bufnr)
  vim.api.nvim_clear_autocmds({ group = augroup, buffer = bufnr })
  vim.api.nvim_create_autocmd({ 'BufEnter', 'InsertLeave', 'BufWritePost' }, {
    group = augroup,
    buffer = bufnr,
    callback = function(args)
      M.refresh_lenses(args.buf)
    end,
    desc = 'kiwi: refresh code lenses',
  })
  M.refresh_lenses(bufnr)
end

--- kiwi's on_attach, then the user's.
function M.on_attach(user)
  return function(client, bufnr)
    attach_lenses(bufnr)
    if user then
      user(client, bufnr)
    end
  end
end

--- Refresh the lenses of every buffer a client serves (soon, outside the handler).
local function refresh_client_lenses(client_id)
  local client = vim.lsp.get_client_by_id(client_id)
  if client then
    vim.schedule(function()
      for _, b in ipairs(M.client_buffers(client)) do
        M.refresh_lenses(b)
      end
    end)
  end
end

--- Server-to-client messages kiwi needs handled: progress of runs (streamed into the output
--- buffer) and lens refreshes (after indexing, when lenses become known).
function M.handlers()
  local default_progress = vim.lsp.handlers['$/progress']
  return {
    ['$/progress'] = function(err, result, ctx, config)
      local handled = require('kiwi.commands').on_progress(result, ctx)
      local value = result and result.value
      if type(value) == 'table' and value.kind == 'end' and not handled then
        -- A server task ended (e.g. indexing): lenses of open buffers may have changed.
        refresh_client_lenses(ctx.client_id)
      end
      if default_progress then
        return default_progress(err, result, ctx, config)
      end
    end,
    ['workspace/codeLens/refresh'] = function(_, _, ctx)
      refresh_client_lenses(ctx.client_id)
      return vim.NIL
    end,
  }
end

--- The client configuration. `opts`: cmd, capabilities, on_attach (called after kiwi's own),
--- handlers, settings, and any other client field (passed through).
function M.client_config(opts)
  opts = opts or {}
  local cfg = {}
  for k, v in pairs(opts) do
    cfg[k] = v
  end
  cfg.name = M.name
  cfg.cmd = opts.cmd or { 'kiwi', 'lsp' }
  cfg.filetypes = M.filetypes
  -- The plugin handles workspace/codeLens/refresh (M.handlers): the server then says when
  -- lenses changed (a quick fix applied, no save needed).
  cfg.capabilities = vim.tbl_deep_extend(
    'force',
    vim.lsp.protocol.make_client_capabilities(),
    { workspace = { codeLens = { refreshSupport = true } } },
    opts.capabilities or {}
  )
  cfg.handlers = vim.tbl_extend('force', M.handlers(), opts.handlers or {})
  cfg.on_attach = M.on_attach(opts.on_attach)
  return cfg
end

--- The configuration for `vim.lsp.config` (0.11+): root_dir decides, per buffer, whether the
--- server starts at all (only for files under `.ai/`).
function M.lsp_config(opts)
  local cfg = M.client_config(opts)
  cfg.name = nil
  cfg.root_dir = function(bufnr, on_dir)
    local root = M.buf_root(bufnr)
    if root then
      on_dir(root)
    end
  end
  cfg.root_markers = nil
  return cfg
end

return M
