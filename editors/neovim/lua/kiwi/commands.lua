-- :KiwiRun, :KiwiCancel, :KiwiEnv, :KiwiValidate, :KiwiInit and the lens commands (kiwi.runTool,
-- kiwi.showEnvironment, kiwi.validate), all through `workspace/executeCommand`.
--
-- A run sends its own work-done token; the server streams each output line as a `$/progress`
-- report on that token (kiwi's `$/progress` handler calls on_progress), and the lines go
-- into the `kiwi://output` scratch buffer as they come. The result is appended when the
-- request returns. Cancelling sends `window/workDoneProgress/cancel` with the token.
local config = require('kiwi.config')

local M = {}

local OUTPUT = 'kiwi://output'
local ENVIRONMENT = 'kiwi://environment'
local CMD_CHECK_PARAMS = 'kiwi.checkParameters'

local runs = {} -- token -> { client_id, streamed, done }
local active -- token of the latest run that has not returned
local counter = 0
local last_target -- { client_id, bufnr, argument }: the tool run last (for commands from the output buffer)

local function notify(msg, level)
  vim.notify('kiwi: ' .. msg, level or vim.log.levels.INFO)
end

--- A scratch buffer by name, created on first use.
local function scratch(name, filetype)
  local buf = vim.fn.bufnr(name)
  if buf == -1 or not vim.api.nvim_buf_is_valid(buf) then
    buf = vim.api.nvim_create_buf(false, true)
    vim.api.nvim_buf_set_name(buf, name)
  end
  vim.bo[buf].buftype = 'nofile'
  vim.bo[buf].bufhidden = 'hide'
  vim.bo[buf].swapfile = false
  vim.bo[buf].filetype = filetype
  return buf
end

--- Show a buffer in a window at the bottom (if no window shows it yet), keeping the cursor
--- where it was.
local function show(buf)
  if vim.fn.bufwinid(buf) ~= -1 then
    return
  end
  local win = vim.api.nvim_get_current_win()
  vim.cmd('botright 12split')
  vim.api.nvim_win_set_buf(0, buf)
  vim.api.nvim_set_current_win(win)
end

local function split_lines(text)
  local out = {}
  for _, l in ipairs(vim.split(text, '\n', { plain = true })) do
    table.insert(out, (l:gsub('\r$', '')))
  end
  return out
end

--- Buffer lines from lines that may hold newlines themselves (a server's message often does:
--- nvim_buf_set_lines refuses an item with a newline, and the whole message was lost).
local function buffer_lines(lines)
  local out = {}
  for _, l in ipairs(lines) do
    for _, part in ipairs(split_lines(tostring(l))) do
      table.insert(out, part)
    end
  end
  return out
end

local function set_lines(buf, lines)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, buffer_lines(lines))
end

local function append(buf, lines)
  if not vim.api.nvim_buf_is_valid(buf) then
    return
  end
  vim.api.nvim_buf_set_lines(buf, -1, -1, false, buffer_lines(lines))
  local win = vim.fn.bufwinid(buf)
  if win ~= -1 then
    vim.api.nvim_win_set_cursor(win, { vim.api.nvim_buf_line_count(buf), 0 })
  end
end

--- The kiwi client attached to a buffer.
local function buf_client(bufnr)
  if vim.lsp.get_clients then
    return vim.lsp.get_clients({ bufnr = bufnr, name = config.name })[1]
  end
  for _, c in pairs(vim.lsp.buf_get_clients(bufnr)) do
    if c.name == config.name then
      return c
    end
  end
  return nil
end

--- The client and argument for a command on the current buffer (from the output buffer: the
--- tool run last).
local function current_target()
  local bufnr = vim.api.nvim_get_current_buf()
  local client = buf_client(bufnr)
  if client then
    return client, { uri = vim.uri_from_bufnr(bufnr) }, bufnr
  end
  if last_target and vim.api.nvim_buf_get_name(bufnr) == OUTPUT then
    local c = vim.lsp.get_client_by_id(last_target.client_id)
    if c then
      return c, vim.deepcopy(last_target.argument), last_target.bufnr
    end
  end
  return nil
end

local function execute(client, command, argument, bufnr, token, handler)
  local params = { command = command, arguments = { argument } }
  if token then
    params.workDoneToken = token
  end
  local ok = config.call_client(client, 'request', 'workspace/executeCommand', params, handler, bufnr)
  if not ok then
    notify(command .. ': the request could not be sent (is the server running?)', vim.log.levels.ERROR)
  end
  return ok
end

--- `key=value` words into a parameters table; a value that is valid JSON is decoded (numbers,
--- booleans, arrays, quoted strings), anything else is a string.
function M.parse_params(words)
  local params = {}
  for _, w in ipairs(words) do
    local k, v = w:match('^([^=]+)=(.*)$')
    if not k then
      error(('"%s" is not key=value'):format(w), 0)
    end
    local ok, decoded = pcall(vim.json.decode, v)
    if ok and decoded ~= nil and decoded ~= vim.NIL then
      params[k] = decoded
    else
      params[k] = v
    end
  end
  return params
end

--- Words of an input line, split on unescaped whitespace (`\ ` keeps a space).
local function words_of(line)
  local out = {}
  for _, w in ipairs(vim.fn.split(line, [[\\\@<!\s\+]])) do
    table.insert(out, (w:gsub('\\ ', ' ')))
  end
  return out
end

local function summary(r)
  local lines = {}
  if type(r) ~= 'table' then
    return { '── result: ' .. vim.inspect(r) }
  end
  if type(r.error) == 'table' then
    return { ('── error (%s): %s'):format(tostring(r.error.kind), tostring(r.error.message)) }
  end
  local parts = {}
  if r.cancelled then
    table.insert(parts, 'cancelled')
  elseif r.timed_out then
    table.insert(parts, 'timed out')
  elseif r.signal ~= nil and r.signal ~= vim.NIL then
    table.insert(parts, 'signal ' .. tostring(r.signal))
  elseif r.exit_code ~= nil and r.exit_code ~= vim.NIL then
    table.insert(parts, 'exit ' .. tostring(r.exit_code))
  end
  if r.status ~= nil and r.status ~= vim.NIL then
    table.insert(parts, 'HTTP ' .. tostring(r.status))
  end
  if r.duration_ms ~= nil and r.duration_ms ~= vim.NIL then
    table.insert(parts, tostring(r.duration_ms) .. ' ms')
  end
  if type(r.chain) == 'table' and #r.chain > 0 then
    table.insert(parts, table.concat(r.chain, ' → '))
  end
  table.insert(lines, '── ' .. table.concat(parts, ' · '))
  if r.truncated then
    table.insert(lines, '── (output truncated)')
  end
  return lines
end

--- Called by kiwi's `$/progress` handler; true when the token is one of this plugin's runs.
function M.on_progress(result, _)
  local token = result and result.token
  local run = token ~= nil and runs[token]
  if not run then
    return false
  end
  local value = result.value
  if type(value) == 'table' and value.kind == 'report' and type(value.message) == 'string' then
    run.streamed = run.streamed + 1
    append(run.buf, split_lines(value.message))
  end
  return true
end

--- Run a tool: `argument` is what kiwi.runTool takes ({uri|path|id, parameters?}).
function M.run(client, argument, bufnr)
  if active and runs[active] and not runs[active].done then
    notify('a run is in progress: :KiwiCancel (or :KiwiRun!) stops it', vim.log.levels.WARN)
    return nil
  end
  counter = counter + 1
  local token = ('kiwi.nvim-run-%d'):format(counter)
  local buf = scratch(OUTPUT, 'kiwioutput')
  local what = argument.id or argument.path or (argument.uri and vim.uri_to_fname(argument.uri)) or '?'
  local header = '▶ ' .. what
  if argument.parameters ~= nil and next(argument.parameters) ~= nil then
    header = header .. ' ' .. vim.json.encode(argument.parameters)
  end
  set_lines(buf, { header })
  show(buf)
  local target = vim.deepcopy(argument)
  target.parameters, target.ask = nil, nil
  last_target = { client_id = client.id, bufnr = bufnr, argument = target }
  local run = { client_id = client.id, streamed = 0, buf = buf, done = false }
  runs[token] = run
  active = token
  local sent = execute(client, 'kiwi.runTool', argument, bufnr, token, function(err, result)
    run.done = true
    if err then
      append(buf, { '── error: ' .. (err.message or vim.inspect(err)) })
      return
    end
    if run.streamed == 0 and type(result) == 'table' then
      -- Nothing was streamed (e.g. an HTTP tool): show the output from the result.
      local out = result.stdout or result.body
      if type(out) == 'string' and out ~= '' then
        append(buf, split_lines((out:gsub('\n$', ''))))
      end
    end
    append(buf, summary(result))
  end)
  if not sent then
    run.done = true
    return nil
  end
  return token
end

--- Stop the latest run.
function M.cancel()
  local run = active and runs[active]
  if not run or run.done then
    notify('no run in progress')
    return false
  end
  local client = vim.lsp.get_client_by_id(run.client_id)
  if not client then
    notify('the server of this run has stopped', vim.log.levels.WARN)
    return false
  end
  config.call_client(client, 'notify', 'window/workDoneProgress/cancel', { token = active })
  append(run.buf, { '── cancelling…' })
  return true
end

-- ---------------------------------------------------------------------------------------
-- Asking a tool's parameters, one prompt each (VS Code's level): its name, type, default and
-- description in the prompt; an enum's choices (and a boolean's) through vim.ui.select, the
-- default first; the other types typed (JSON for arrays and objects). Each answer is checked
-- by the server (`kiwi.checkParameters`, the run's own check of CONFIG_SCHEMA) before the next
-- prompt: a refused value is shown with the schema's words and asked again.

local UNSET = '(leave unset)'

local function type_of(prop)
  local t = prop.type
  if type(t) == 'string' then
    return t
  end
  if type(t) == 'table' then
    for _, x in ipairs(t) do
      if type(x) == 'string' and x ~= 'null' then
        return x
      end
    end
  end
  if type(prop.enum) == 'table' then
    return 'enum'
  end
  return 'string'
end

local function shown(v)
  if v == nil or v == vim.NIL then
    return ''
  end
  if type(v) == 'string' then
    return v
  end
  return vim.json.encode(v)
end

--- The properties' names in the file's order (`order` from the server), then any other.
local function ordered_names(props, order)
  local names, seen = {}, {}
  for _, n in ipairs(type(order) == 'table' and order or {}) do
    if type(n) == 'string' and props[n] ~= nil and not seen[n] then
      table.insert(names, n)
      seen[n] = true
    end
  end
  local rest = {}
  for n in pairs(props) do
    if not seen[n] then
      table.insert(rest, n)
    end
  end
  table.sort(rest)
  vim.list_extend(names, rest)
  return names
end

--- The required properties without a default: what a plain run lacks.
function M.missing_required(schema, given)
  local props = type(schema) == 'table' and type(schema.properties) == 'table' and schema.properties or {}
  local out = {}
  for _, n in ipairs(type(schema) == 'table' and type(schema.required) == 'table' and schema.required or {}) do
    local p = props[n]
    local has_default = type(p) == 'table' and p.default ~= nil
    if not (type(given) == 'table' and given[n] ~= nil) and not has_default then
      table.insert(out, n)
    end
  end
  return out
end

--- What was typed for a property of type `t`: the value, or nil and what was expected.
function M.parse_value(t, text)
  local trimmed = vim.trim(text)
  if t == 'integer' then
    if trimmed:match('^[+-]?%d+$') then
      return tonumber(trimmed)
    end
    return nil, 'an integer, e.g. 3'
  elseif t == 'number' then
    local n = tonumber(trimmed)
    if n and n == n and n ~= math.huge and n ~= -math.huge then
      return n
    end
    return nil, 'a number, e.g. 2.5'
  elseif t == 'array' or t == 'object' then
    local ok, v = pcall(vim.json.decode, text)
    local islist = vim.islist or vim.tbl_islist
    if ok and type(v) == 'table' and (t == 'array' and islist(v) or t == 'object' and (next(v) == nil or not islist(v))) then
      return v
    end
    return nil, 'a JSON ' .. t
  end
  return text
end

--- Ask `names` of `schema` in turn, then `done(params)` (not called when cancelled).
local function ask_each(client, target, bufnr, title, schema, names, done)
  local props = type(schema.properties) == 'table' and schema.properties or {}
  local required = {}
  for _, n in ipairs(type(schema.required) == 'table' and schema.required or {}) do
    required[n] = true
  end
  local params = {}
  local step

  local function cancelled()
    notify(title .. ': cancelled, nothing was run')
  end

  --- The server's check of one answer, then the next prompt (or this one again).
  local function accept(i, name, value)
    local arg = vim.deepcopy(target)
    arg.ask, arg.schema, arg.order = nil, nil, nil
    arg.parameters = { [name] = value }
    arg.only = { name }
    execute(client, CMD_CHECK_PARAMS, arg, bufnr, nil, function(err, result)
      if err then
        -- A server without the check: the run checks it.
        params[name] = value
        return step(i + 1)
      end
      local problems = type(result) == 'table' and type(result.problems) == 'table' and result.problems or {}
      local problem = problems[name] or problems['']
      if problem ~= nil and problem ~= vim.NIL then
        notify(('%s = %s: %s'):format(name, shown(value), tostring(problem)), vim.log.levels.ERROR)
        return step(i)
      end
      params[name] = value
      step(i + 1)
    end)
  end

  step = function(i)
    local name = names[i]
    if not name then
      return done(params)
    end
    local prop = type(props[name]) == 'table' and props[name] or {}
    local t = type_of(prop)
    local hint = ('%s, %s'):format(t == 'enum' and 'one of' or t, required[name] and 'required' or 'optional')
    if prop.default ~= nil then
      hint = hint .. ', default ' .. shown(prop.default)
    end
    for _, bound in ipairs({ 'minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'minLength', 'maxLength', 'pattern' }) do
      if prop[bound] ~= nil and type(prop[bound]) ~= 'boolean' then
        hint = hint .. (', %s %s'):format(bound, shown(prop[bound]))
      end
    end
    local prompt = ('%s (%d/%d) · %s%s'):format(name, i, #names, hint,
      type(prop.description) == 'string' and (' — ' .. prop.description) or '')
    if t == 'boolean' or type(prop.enum) == 'table' then
      local values = t == 'boolean' and { true, false } or vim.deepcopy(prop.enum)
      -- The default first, so the first choice takes it.
      for k, x in ipairs(values) do
        if prop.default ~= nil and k > 1 and shown(x) == shown(prop.default) then
          table.insert(values, 1, table.remove(values, k))
          break
        end
      end
      local items = vim.list_extend({}, values)
      if not required[name] then
        table.insert(items, UNSET)
      end
      vim.ui.select(items, { prompt = prompt .. ': ', format_item = shown }, function(choice, idx)
        if choice == nil then
          return cancelled()
        end
        if idx and idx > #values then
          return step(i + 1)
        end
        accept(i, name, choice)
      end)
      return
    end
    vim.ui.input({ prompt = prompt .. ': ', default = shown(prop.default) }, function(text)
      if text == nil then
        return cancelled()
      end
      if text == '' then
        if required[name] then
          notify(name .. ' is required', vim.log.levels.ERROR)
          return step(i)
        end
        return step(i + 1)
      end
      local value, expected = M.parse_value(t, text)
      if value == nil then
        notify(('%s: expected %s'):format(name, expected), vim.log.levels.ERROR)
        return step(i)
      end
      accept(i, name, value)
    end)
  end
  step(1)
end

--- Ask for parameters (the `▶ Run…` lens: its argument carries the schema and the order;
--- `only`, names to ask, else all), then run. A schema with no properties asks for the
--- whole object as `key=value` words.
local function run_asking(client, argument, bufnr, only)
  local schema = type(argument.schema) == 'table' and argument.schema or {}
  local props = type(schema.properties) == 'table' and schema.properties or {}
  local title = 'run ' .. (argument.id or 'the tool')
  local function go(params)
    local a = vim.deepcopy(argument)
    a.ask, a.schema, a.order = nil, nil, nil
    -- A step's lens carries its fixed parameters and asks for the templated ones.
    if type(argument.parameters) == 'table' then
      a.parameters = vim.tbl_extend('force', argument.parameters, params)
    else
      a.parameters = params
    end
    M.run(client, a, bufnr)
  end
  local names = vim.tbl_filter(function(n)
    return only == nil or vim.tbl_contains(only, n)
  end, ordered_names(props, argument.order))
  if #names == 0 then
    vim.ui.input({ prompt = 'Parameters for ' .. (argument.id or 'the tool') .. ' (key=value …): ' }, function(line)
      if line == nil then
        return
      end
      local ok, params = pcall(M.parse_params, words_of(line))
      if not ok then
        notify(params, vim.log.levels.ERROR)
        return
      end
      go(params)
    end)
    return
  end
  ask_each(client, argument, bufnr, title, schema, names, go)
end

--- The `▶ Run…` lens's argument of a buffer's tool (its schema), through `callback`.
local function ask_lens_of(client, bufnr, callback)
  local params = { textDocument = { uri = vim.uri_from_bufnr(bufnr) } }
  local ok = config.call_client(client, 'request', 'textDocument/codeLens', params, function(err, lenses)
    if err or type(lenses) ~= 'table' then
      return callback(nil)
    end
    for _, l in ipairs(lenses) do
      local a = l.command and (l.command.arguments or {})[1]
      if type(a) == 'table' and a.ask and a.schema ~= nil and (a.parameters == nil or a.parameters == vim.NIL) then
        return callback(a)
      end
    end
    callback(nil)
  end, bufnr)
  if not ok then
    callback(nil)
  end
end

--- A plain run (no parameters given) of a tool with required parameters without a default:
--- ask just those, in the schema's order, instead of a run that can only be refused.
local function run_plain(client, argument, bufnr)
  if argument.parameters ~= nil or not (argument.uri or argument.path) or not bufnr then
    return M.run(client, argument, bufnr)
  end
  ask_lens_of(client, bufnr, function(lens)
    local missing = lens and M.missing_required(lens.schema, nil) or {}
    if #missing == 0 then
      return M.run(client, argument, bufnr)
    end
    local a = vim.deepcopy(argument)
    a.schema, a.order = lens.schema, lens.order
    run_asking(client, a, bufnr, missing)
  end)
end

--- The display width of a string.
local function width(s)
  return vim.fn.strdisplaywidth(s)
end

--- Markdown (what the server renders for hovers and the environment) as readable text:
--- headings underlined, `**strong**` and `code` marks dropped, links as `text <url>`, bullets
--- as •, tables as aligned columns.
function M.markdown_to_text(md)
  local function inline(l)
    l = l:gsub('%*%*(.-)%*%*', '%1')
    l = l:gsub('`([^`]*)`', '%1')
    l = l:gsub('%[([^%]]*)%]%(([^)]*)%)', '%1 <%2>')
    l = l:gsub('\\([%p])', '%1')
    return l
  end
  local out, table_rows = {}, nil
  local function flush_table()
    if not table_rows then
      return
    end
    local widths = {}
    for _, row in ipairs(table_rows) do
      for i, cell in ipairs(row) do
        widths[i] = math.max(widths[i] or 0, width(cell))
      end
    end
    for _, row in ipairs(table_rows) do
      local cells = {}
      for i, cell in ipairs(row) do
        cells[i] = cell .. string.rep(' ', (widths[i] or 0) - width(cell))
      end
      table.insert(out, (table.concat(cells, '  '):gsub('%s+$', '')))
    end
    table_rows = nil
  end
  for _, l in ipairs(split_lines(md)) do
    if l:match('^%s*|') then
      if not l:match('^%s*|[%s:|-]+|%s*$') then
        local row = {}
        local inner = l:gsub('^%s*|', ''):gsub('|%s*$', '')
        for _, cell in ipairs(vim.split(inner, '|', { plain = true })) do
          table.insert(row, vim.trim(inline(cell)))
        end
        table_rows = table_rows or {}
        table.insert(table_rows, row)
      end
    else
      flush_table()
      local level, title = l:match('^(#+)%s+(.*)$')
      if level then
        local t = inline(title)
        table.insert(out, t)
        table.insert(out, string.rep(#level <= 1 and '═' or '─', width(t)))
      elseif l:match('^%s*[-*]%s+') then
        local indent, rest = l:match('^(%s*)[-*]%s+(.*)$')
        table.insert(out, indent .. '• ' .. inline(rest))
      elseif l:match('^```') then
        -- a fence: its lines stay as they are
      else
        table.insert(out, inline(l))
      end
    end
  end
  flush_table()
  return out
end

--- The environment report of a tool (its chain, interpreters, variables) in a read-only
--- scratch buffer, as readable text.
function M.environment(client, argument, bufnr)
  return execute(client, 'kiwi.showEnvironment', argument, bufnr, nil, function(err, result)
    if err then
      notify('environment: ' .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
      return
    end
    local buf = scratch(ENVIRONMENT, 'kiwienv')
    vim.bo[buf].modifiable = true
    set_lines(buf, M.markdown_to_text(result and result.markdown or vim.inspect(result)))
    vim.bo[buf].modifiable = false
    show(buf)
  end)
end

--- Check an item; its diagnostics go to the quickfix list.
function M.validate(client, argument, bufnr)
  return execute(client, 'kiwi.validate', argument, bufnr, nil, function(err, result)
    if err then
      notify('validate: ' .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
      return
    end
    local items = {}
    for _, d in ipairs(result.diagnostics or {}) do
      table.insert(items, {
        filename = result.path,
        lnum = d.line,
        col = d.column,
        type = (d.severity or 'e'):sub(1, 1):upper(),
        text = ('%s %s'):format(d.code or '', d.message or ''),
      })
    end
    vim.fn.setqflist({}, ' ', { title = 'kiwi validate ' .. tostring(result.path), items = items })
    local name = vim.fn.fnamemodify(tostring(result.path), ':t')
    if #items == 0 then
      notify(name .. ': valid, no problems')
    else
      notify(
        ('%s: %s, %d problem(s) in the quickfix list'):format(name, result.valid and 'valid' or 'not valid', #items),
        result.valid and vim.log.levels.WARN or vim.log.levels.ERROR
      )
    end
  end)
end

--- Create (with `force`: refresh) the user space, like `kiwi init`; the server re-indexes.
function M.init(client, force, bufnr)
  return execute(client, 'kiwi.init', { force = force }, bufnr, nil, function(err, result)
    if err then
      notify('init: ' .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
      return
    end
    notify(result and result.message or 'init: done')
  end)
end

--- The MCP configuration for the user's agent plugin (mcphub.nvim, codecompanion, avante, ...):
--- the language server's agent endpoint through `kiwi mcp --attach --socket`, so the agent sees
--- the unsaved buffers and the item under the cursor. Shown in `kiwi://agent-config` (JSON) and
--- kept in M.last_agent_config.
function M.agent_config(client, _, bufnr)
  local ok = config.call_client(client, 'request', 'kiwi/agentEndpoint', vim.NIL, function(err, result)
    if err then
      notify('agent endpoint: ' .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
      return
    end
    local socket = type(result) == 'table' and result.socket
    if type(socket) ~= 'string' then
      notify('this kiwi language server serves no agent endpoint (see its log)', vim.log.levels.ERROR)
      return
    end
    local cmd = (client.config and client.config.cmd or { 'kiwi' })[1]
    local bin = vim.fn.exepath(cmd)
    if bin == '' then
      bin = cmd
    end
    local text = vim.fn.json_encode({
      mcpServers = {
        kiwi = { command = bin, args = { 'mcp', '--attach', '--socket', socket } },
      },
    })
    M.last_agent_config = text
    local buf = scratch('kiwi://agent-config', 'json')
    set_lines(buf, {
      text,
    })
    show(buf)
    notify('MCP config for your agent plugin in kiwi://agent-config (the endpoint: ' .. socket .. ')')
  end, bufnr)
  if not ok then
    notify('kiwi/agentEndpoint: the request could not be sent (is the server running?)', vim.log.levels.ERROR)
  end
end

local cursor_tick = 0
--- Tell the server where the cursor is (kiwi/activeItem, debounced): the attached agent's
--- `kiwi://editor/active`.
local function cursor_moved(bufnr)
  cursor_tick = cursor_tick + 1
  local tick = cursor_tick
  vim.defer_fn(function()
    if tick ~= cursor_tick or not vim.api.nvim_buf_is_valid(bufnr) or vim.api.nvim_get_current_buf() ~= bufnr then
      return
    end
    local client = buf_client(bufnr)
    if not client then
      return
    end
    local p = vim.lsp.util.make_position_params(0, client.offset_encoding)
    config.call_client(client, 'notify', 'kiwi/activeItem', { uri = p.textDocument.uri, position = p.position })
  end, 150)
end

local function with_target(fn)
  local client, argument, bufnr = current_target()
  if not client then
    notify('this buffer is not a Kiwi item (no kiwi client attached to it)', vim.log.levels.ERROR)
    return nil
  end
  return fn(client, argument, bufnr)
end

local function lens_command(fn)
  return function(command, ctx)
    local client = vim.lsp.get_client_by_id(ctx.client_id)
    if not client then
      notify('the kiwi client has stopped', vim.log.levels.ERROR)
      return
    end
    local argument = (command.arguments or {})[1] or {}
    if type(argument) == 'string' then
      argument = { id = argument }
    end
    fn(client, argument, ctx.bufnr)
  end
end

function M.register()
  vim.lsp.commands['kiwi.runTool'] = lens_command(function(client, argument, bufnr)
    if argument.askArgs and argument.argsLine == nil and argument.args == nil then
      -- `▶ Run…` of a skill's script: its arguments as typed after it in a shell (the server
      -- splits them as a shell splits words; nothing is expanded).
      local what = argument.path and vim.fn.fnamemodify(argument.path, ':t') or 'the script'
      vim.ui.input({ prompt = 'Arguments for ' .. what .. ': ' }, function(line)
        if line == nil then
          return -- cancelled: nothing runs
        end
        local a = vim.deepcopy(argument)
        a.argsLine = line
        M.run(client, a, bufnr)
      end)
    elseif argument.ask then
      run_asking(client, argument, bufnr)
    else
      run_plain(client, argument, bufnr)
    end
  end)
  vim.lsp.commands['kiwi.showEnvironment'] = lens_command(M.environment)
  vim.lsp.commands['kiwi.validate'] = lens_command(M.validate)

  vim.api.nvim_create_user_command('KiwiRun', function(o)
    if o.bang then
      M.cancel()
      return
    end
    local ok, params = pcall(M.parse_params, o.fargs)
    if not ok then
      notify(':KiwiRun ' .. params, vim.log.levels.ERROR)
      return
    end
    with_target(function(client, argument, bufnr)
      if next(params) ~= nil then
        argument.parameters = params
        return M.run(client, argument, bufnr)
      end
      return run_plain(client, argument, bufnr)
    end)
  end, { nargs = '*', bang = true, desc = 'kiwi: run this tool (key=value parameters); ! cancels the run' })
  vim.api.nvim_create_user_command('KiwiCancel', function()
    M.cancel()
  end, { desc = 'kiwi: stop the running tool' })
  vim.api.nvim_create_user_command('KiwiEnv', function()
    with_target(M.environment)
  end, { desc = "kiwi: show this tool's environment" })
  vim.api.nvim_create_user_command('KiwiValidate', function()
    with_target(M.validate)
  end, { desc = 'kiwi: check this item, problems to the quickfix list' })
  vim.api.nvim_create_user_command('KiwiAgentConfig', function()
    with_target(M.agent_config)
  end, { desc = "kiwi: print the MCP config of the editor's agent endpoint for your agent plugin" })
  vim.api.nvim_create_autocmd({ 'CursorMoved', 'CursorMovedI' }, {
    group = vim.api.nvim_create_augroup('kiwi_active_item', { clear = true }),
    callback = function(a)
      if buf_client(a.buf) then
        cursor_moved(a.buf)
      end
    end,
  })
  vim.api.nvim_create_user_command('KiwiInit', function(o)
    with_target(function(client, _, bufnr)
      return M.init(client, o.bang, bufnr)
    end)
  end, { bang = true, desc = 'kiwi: create the user space (! refreshes the files init wrote)' })
end

return M
