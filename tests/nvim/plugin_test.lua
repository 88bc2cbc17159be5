-- End-to-end test of the kiwi Neovim plugin (editors/neovim), run by tests/nvim/plugin.sh in
-- Neovim 0.7.2 and 0.12 after an init file that only puts the plugin on 'runtimepath' and
-- calls require('kiwi').setup{} (with `kiwi` on PATH). Prints one "ok"/"FAIL" line per check
-- and exits non-zero when any check failed. Every wait is bounded.
-- Env: KIWI_PROJ (a copy of fixtures/lsp with a .venv), KIWI_GRAMMAR (grammars/markdown/
-- injections.scm), KIWI_TIMEOUT (ms per wait, default 20000).

local proj = assert(vim.env.KIWI_PROJ, 'KIWI_PROJ not set')
local timeout = tonumber(vim.env.KIWI_TIMEOUT or '20000')
local v = vim.version()
local nvim012 = vim.fn.has('nvim-0.12') == 1
-- KIWI_MODE=lsp_enable: the init file only has vim.lsp.enable('kiwi') (lsp/kiwi.lua); a shorter run.
local full = vim.env.KIWI_MODE ~= 'lsp_enable'
local failures = 0

local function out(s)
  io.stdout:write(s, '\n')
end

-- Messages from the plugin, on their own lines among the checks.
vim.notify = function(msg)
  out('     (notify) ' .. tostring(msg))
end

local function check(name, ok, seen)
  if ok then
    out('ok   ' .. name)
  else
    failures = failures + 1
    out('FAIL ' .. name .. (seen ~= nil and ('\n     seen: ' .. vim.inspect(seen):gsub('\n', '\n     ')) or ''))
  end
  return ok
end

local function wait(fn)
  return vim.wait(timeout, function()
    local ok, r = pcall(fn)
    return ok and r
  end, 20)
end

local function kiwi_client(bufnr)
  if vim.lsp.get_clients then
    return vim.lsp.get_clients({ bufnr = bufnr, name = 'kiwi' })[1]
  end
  for _, c in pairs(vim.lsp.buf_get_clients(bufnr)) do
    if c.name == 'kiwi' then
      return c
    end
  end
end

local function all_clients()
  return (vim.lsp.get_clients or vim.lsp.get_active_clients)()
end

local function edit(path)
  vim.cmd('edit ' .. vim.fn.fnameescape(path))
  return vim.api.nvim_get_current_buf()
end

local function buf_text(name)
  local b = vim.fn.bufnr(name)
  if b == -1 then
    return nil
  end
  return table.concat(vim.api.nvim_buf_get_lines(b, 0, -1, false), '\n')
end

--- 0-based (line, byte column) of the first `needle` in a buffer, plus `plus` bytes.
local function find(bufnr, needle, plus)
  for i, l in ipairs(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false)) do
    local s = l:find(needle, 1, true)
    if s then
      return i - 1, s - 1 + (plus or 0)
    end
  end
  error('not in the buffer: ' .. needle)
end

local function main()
  out(('--- plugin in nvim %d.%d.%d%s'):format(v.major, v.minor, v.patch, ({ lsp_enable = ", only vim.lsp.enable('kiwi') (lsp/kiwi.lua)", lsp_start = ", setup{} through vim.lsp.start (0.8–0.10 branch)" })[vim.env.KIWI_MODE or ''] or ", require('kiwi').setup{}"))
  local kiwi = require('kiwi')
  local want_method = vim.lsp.config ~= nil and vim.lsp.enable ~= nil and 'vim.lsp.enable'
    or (vim.lsp.start and 'vim.lsp.start' or 'vim.lsp.start_client')
  if vim.env.KIWI_MODE == 'lsp_start' then
    want_method = 'vim.lsp.start' -- the init file hid vim.lsp.config/enable during setup()
  end
  if not full then
    -- Only vim.lsp.enable('kiwi') in the init file: the config comes from lsp/kiwi.lua.
    local cfg = vim.lsp.config.kiwi
    check(
      'lsp/kiwi.lua: vim.lsp.enable(\'kiwi\') alone gives the kiwi config (setup() not called)',
      kiwi.method == nil and vim.lsp.is_enabled('kiwi') and cfg and vim.deep_equal(cfg.cmd, { 'kiwi', 'lsp' })
        and type(cfg.root_dir) == 'function',
      { method = kiwi.method, cmd = cfg and cfg.cmd }
    )
  else
    check('setup went through ' .. want_method, kiwi.method == want_method, kiwi.method)
  end
  if nvim012 and full and vim.env.KIWI_MODE ~= 'lsp_start' then
    check(
      '0.12: setup went through vim.lsp.config/vim.lsp.enable',
      kiwi.method == 'vim.lsp.enable' and vim.lsp.is_enabled('kiwi') and vim.lsp.config.kiwi ~= nil,
      { method = kiwi.method, enabled = vim.lsp.is_enabled and vim.lsp.is_enabled('kiwi') }
    )
  end

  -- 1. a directive: the client attaches, rooted at the project; diagnostics arrive.
  local greet = edit(proj .. '/.ai/directives/greet.md')
  local attached = wait(function()
    local c = kiwi_client(greet)
    return c and c.initialized ~= false and c.server_capabilities and next(c.server_capabilities) ~= nil
  end)
  local client = kiwi_client(greet)
  if not check('the client attaches to a directive', attached, { clients = #all_clients() }) then
    return
  end
  check('rooted at the folder holding .ai/', client.config.root_dir == proj, client.config.root_dir)
  local function codes()
    local cs = {}
    for _, d in ipairs(vim.diagnostic.get(greet)) do
      table.insert(cs, d.code or (d.user_data and d.user_data.lsp and d.user_data.lsp.code))
    end
    return cs
  end
  check('K003 diagnostic arrives on the directive', wait(function()
    return vim.tbl_contains(codes(), 'K003')
  end), codes())

  -- 1b. files changed outside the editor, with no file events from the client (Neovim on
  -- Linux cannot watch: didChangeWatchedFiles.dynamicRegistration is false): the server
  -- watches by itself. The tool the directive misspells appears on disk, then goes again.
  local caps = vim.lsp.protocol.make_client_capabilities()
  local dyn = caps.workspace and caps.workspace.didChangeWatchedFiles
    and caps.workspace.didChangeWatchedFiles.dynamicRegistration
  local ecko = proj .. '/.ai/tools/text/ecko.py'
  vim.fn.writefile(vim.fn.readfile(proj .. '/.ai/tools/text/echo.py'), ecko)
  check(('a tool created on disk clears K003 (client file watching: %s)'):format(tostring(dyn or false)),
    wait(function()
      return not vim.tbl_contains(codes(), 'K003')
    end), codes())
  os.remove(ecko)
  check('the tool deleted on disk brings K003 back', wait(function()
    return vim.tbl_contains(codes(), 'K003')
  end), codes())

  if full then
    -- 2. hover on an interpreter: the project's .venv.
    local rt = edit(proj .. '/.ai/tools/rt/py_rt.py')
    check('the same client attaches to a runtime', wait(function()
      local c = kiwi_client(rt)
      return c and c.id == client.id
    end), #all_clients())
    local line, col = find(rt, 'venv_python', 2)
    local hover_text
    wait(function()
      local res = vim.lsp.buf_request_sync(rt, 'textDocument/hover', {
        textDocument = { uri = vim.uri_from_bufnr(rt) },
        position = { line = line, character = col },
      }, 5000)
      for _, r in pairs(res or {}) do
        local c = r.result and r.result.contents
        hover_text = c and (c.value or vim.inspect(c))
        if hover_text and hover_text:find(proj .. '/.venv/bin/python', 1, true) then
          return true
        end
      end
      return false
    end)
    check(
      'hover on the interpreter shows ' .. proj .. '/.venv/bin/python',
      hover_text and hover_text:find(proj .. '/.venv/bin/python', 1, true),
      hover_text
    )
  end

  -- 3. a tool: the plugin's lens refresh brings a ▶ Run lens (the test never asks for lenses).
  local echo = edit(proj .. '/.ai/tools/text/echo.py')
  local function lens(title)
    for _, l in ipairs(vim.lsp.codelens.get(echo)) do
      if l.command and l.command.title == title then
        return l
      end
    end
  end
  local ok_lens = wait(function()
    return lens('▶ Run') ~= nil
  end)
  check('a ▶ Run lens is shown on a tool', ok_lens, vim.tbl_map(function(l)
    return l.command and l.command.title
  end, vim.lsp.codelens.get(echo)))

  -- 3b. lenses follow edits: a line typed in insert mode (InsertLeave), then a line added and
  -- saved (BufWritePost). Nothing else asks for lenses of an open buffer.
  if full and ok_lens then
    local function run_line()
      local l = lens('▶ Run')
      return l and l.range.start.line
    end
    local before = run_line()
    vim.api.nvim_set_current_buf(echo)
    vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes('ggO# typed<Esc>', true, false, true), 'x', false)
    check('lenses refresh on InsertLeave (▶ Run moves down a line)', wait(function()
      return run_line() == before + 1
    end), { before = before, now = run_line() })
    vim.api.nvim_buf_set_lines(echo, 0, 0, false, { '# saved' })
    vim.cmd('silent write')
    check('lenses refresh on BufWritePost (▶ Run moves down again)', wait(function()
      return run_line() == before + 2
    end), { before = before, now = run_line() })
    -- A change outside insert mode and never saved (what applying a quick fix does): the
    -- server asks for a refresh (workspace/codeLens/refresh).
    vim.api.nvim_buf_set_lines(echo, 0, 0, false, { '# fixed' })
    check('lenses refresh after a change without InsertLeave or :w (a quick fix)', wait(function()
      return run_line() == before + 3
    end), { before = before, now = run_line() })
  end

  -- 4. running lenses through vim.lsp.codelens.run() (vim.ui.select picks the title): ▶ Run,
  -- then ▶ Run… (vim.ui.input answers a parameter); the output lands in kiwi://output.
  local function run_lens(title, answer)
    local l = lens(title)
    if not l then
      return nil
    end
    vim.api.nvim_set_current_buf(echo)
    vim.api.nvim_win_set_cursor(0, { l.range.start.line + 1, 0 })
    local picked, asked
    local select, input = vim.ui.select, vim.ui.input
    vim.ui.select = function(items, opts, on_choice)
      for _, it in ipairs(items) do
        if opts.format_item(it) == title then
          picked = title
          return on_choice(it)
        end
      end
      on_choice(nil)
    end
    vim.ui.input = function(opts, on_confirm)
      asked = opts.prompt
      on_confirm(answer)
    end
    vim.lsp.codelens.run()
    vim.ui.select, vim.ui.input = select, input
    return picked, asked
  end
  if full and ok_lens then
    local picked = run_lens('▶ Run')
    local ran = wait(function()
      local t = buf_text('kiwi://output')
      return t and t:find('hello world', 1, true) and t:find('── exit 0', 1, true)
    end)
    check('running the ▶ Run lens shows the output and result in kiwi://output', ran and picked, {
      picked = picked,
      output = buf_text('kiwi://output'),
    })
    local picked2, asked = run_lens('▶ Run…', 'lens')
    ran = wait(function()
      local t = buf_text('kiwi://output')
      return t and t:find('hello lens', 1, true) and t:find('── exit 0', 1, true)
    end)
    check('the ▶ Run… lens asks for its parameter by name and type, then runs with it',
      ran and picked2 and asked and asked:find('name (1/1) · string, optional', 1, true) == 1, {
      picked = picked2,
      asked = asked,
      output = buf_text('kiwi://output'),
    })
  end

  -- 5. :KiwiRun with a parameter: the tool's real output, in order, then the result.
  vim.api.nvim_set_current_buf(echo)
  vim.cmd('KiwiRun name=kiwi')
  local ran = wait(function()
    local t = buf_text('kiwi://output')
    return t and t:find('── exit 0', 1, true) ~= nil and t:find('hello kiwi', 1, true) ~= nil
  end)
  local t = buf_text('kiwi://output') or ''
  local a, b, c = t:find('line one', 1, true), t:find('hello kiwi', 1, true), t:find('── exit 0', 1, true)
  check(
    ':KiwiRun name=kiwi puts the output, then the result, in kiwi://output',
    ran and t:find('▶ ', 1, true) == 1 and a and b and c and a < b and b < c and t:find('rt/py_rt', 1, true),
    t
  )
  -- From the output buffer, :KiwiRun runs the last tool again.
  vim.api.nvim_set_current_buf(vim.fn.bufnr('kiwi://output'))
  vim.cmd('KiwiRun name=again')
  check(':KiwiRun from kiwi://output runs the last tool again', wait(function()
    local o = buf_text('kiwi://output')
    return o and o:find('hello again', 1, true) and o:find('── exit 0', 1, true)
  end), buf_text('kiwi://output'))
  vim.api.nvim_set_current_buf(echo)
  check('kiwi://output is shown in a window', vim.fn.bufwinid('kiwi://output') ~= -1, vim.fn.bufwinid('kiwi://output'))
  -- A refused run (a parameter of the wrong type): kiwi's whole message, which spans lines,
  -- in the output buffer; before, nvim_buf_set_lines raised "item contains newlines" and the
  -- message was lost.
  local lua_errors = {}
  vim.api.nvim_set_current_buf(echo)
  local ok_run, run_err = pcall(vim.cmd, 'KiwiRun name=5')
  if not ok_run then
    table.insert(lua_errors, run_err)
  end
  local refused = wait(function()
    local o = buf_text('kiwi://output') or ''
    return o:find('do not match its CONFIG_SCHEMA', 1, true) ~= nil and o:find('`name`', 1, true) ~= nil
  end)
  check('a refused run shows kiwi\'s message, every line of it', refused and #lua_errors == 0, {
    errors = lua_errors,
    output = buf_text('kiwi://output'),
  })

  -- 5b. A refused run names every parameter at fault, as the editor's D113 does: a name the
  -- schema does not declare is listed beside the wrong type (before: only `name`).
  vim.api.nvim_set_current_buf(echo)
  vim.cmd('KiwiRun name=5 colour=red')
  check('a refused run also lists the parameter the schema does not declare (as D113 does)', wait(function()
    local o = buf_text('kiwi://output') or ''
    return o:find('`name`', 1, true) ~= nil and o:find('`colour`: not a parameter', 1, true) ~= nil
  end), buf_text('kiwi://output'))

  if full then
    -- 5c. The ▶ Run… lens asks each parameter on its own, at VS Code's level: its name, type
    -- and default in the prompt (vim.ui.input), an enum's choices through vim.ui.select, and
    -- each answer checked by the server against the schema before the next: `0` for a
    -- `minimum: 1` is refused with the schema's message and asked again; nothing runs with it.
    local banner = edit(proj .. '/.ai/tools/text/banner.py')
    local function banner_lens(title)
      for _, l in ipairs(vim.lsp.codelens.get(banner)) do
        if l.command and l.command.title == title then
          return l
        end
      end
    end
    wait(function()
      return banner_lens('▶ Run…') ~= nil
    end)
    local prompts, choices, notes = {}, {}, {}
    local answers = { text = { 'hi' }, width = { '0', '3' } }
    local select, input, notify = vim.ui.select, vim.ui.input, vim.notify
    vim.ui.select = function(items, opts, on_choice)
      local fmt = opts.format_item or tostring
      for _, it in ipairs(items) do
        if fmt(it) == '▶ Run…' then
          return on_choice(it)
        end
      end
      table.insert(prompts, opts.prompt or '')
      choices[#prompts] = vim.tbl_map(fmt, items)
      for i, it in ipairs(items) do
        if fmt(it) == 'box' then
          return on_choice(it, i)
        end
      end
      on_choice(nil)
    end
    vim.ui.input = function(opts, on_confirm)
      table.insert(prompts, opts.prompt or '')
      for name, queue in pairs(answers) do
        if (opts.prompt or ''):find(name, 1, true) == 1 then
          return on_confirm(table.remove(queue, 1))
        end
      end
      on_confirm(nil)
    end
    vim.notify = function(msg, level)
      table.insert(notes, tostring(msg))
      notify(msg, level)
    end
    local l = banner_lens('▶ Run…')
    if l then
      vim.api.nvim_set_current_buf(banner)
      vim.api.nvim_win_set_cursor(0, { l.range.start.line + 1, 0 })
      vim.lsp.codelens.run()
    end
    local banner_ran = wait(function()
      local o = buf_text('kiwi://output') or ''
      return o:find('banner: hi', 1, true) and o:find('── exit 0', 1, true)
    end)
    local o = buf_text('kiwi://output') or ''
    local function prompt_of(name)
      for i, p in ipairs(prompts) do
        if p:find(name, 1, true) == 1 then
          return p, choices[i]
        end
      end
    end
    local p_text = prompt_of('text') or ''
    local p_style, style_choices = prompt_of('style')
    local p_width = prompt_of('width') or ''
    check('▶ Run… asks each parameter: name, type, required, description', p_text:find('string', 1, true)
      and p_text:find('required', 1, true) and p_text:find('What the banner says', 1, true), prompts)
    check('▶ Run… offers an enum\'s choices through vim.ui.select, the default first',
      p_style and style_choices and style_choices[1] == 'plain' and vim.tbl_contains(style_choices, 'stars'),
      { prompt = p_style, choices = style_choices })
    check('▶ Run… shows an integer\'s type and default', p_width:find('integer', 1, true)
      and p_width:find('default 10', 1, true), prompts)
    local refused_zero = false
    for _, n in ipairs(notes) do
      if n:find('width', 1, true) and n:find('minimum', 1, true) then
        refused_zero = true
      end
    end
    local widths = 0
    for _, p in ipairs(prompts) do
      if p:find('width', 1, true) == 1 then
        widths = widths + 1
      end
    end
    check('▶ Run… refuses 0 for minimum: 1 with the schema\'s message and asks again', refused_zero and widths == 2,
      { notes = notes, prompts = prompts })
    check('▶ Run… runs with the answers (box, width 3), the output streamed',
      banner_ran and o:find('###\n', 1, true) and not o:find('####', 1, true), o)

    -- 5d. A plain :KiwiRun of a tool with a required parameter (no default) asks for just that
    -- one instead of a run that can only be refused.
    prompts, notes = {}, {}
    answers = { text = { 'plain run' } }
    vim.api.nvim_set_current_buf(banner)
    vim.cmd('KiwiRun')
    local asked_ran = wait(function()
      local out_text = buf_text('kiwi://output') or ''
      return out_text:find('banner: plain run', 1, true) and out_text:find('── exit 0', 1, true)
    end)
    check(':KiwiRun asks only the required parameter without a default, then runs',
      asked_ran and #prompts == 1 and prompts[1]:find('text', 1, true) == 1,
      { prompts = prompts, output = buf_text('kiwi://output') })
    vim.ui.select, vim.ui.input, vim.notify = select, input, notify
  end

  if full then
    -- 6. streaming and cancel: a tool that prints, then sleeps 60 s.
    local slow = edit(proj .. '/.ai/tools/text/slow.py')
    wait(function()
      return kiwi_client(slow) ~= nil
    end)
    local t0 = vim.loop.hrtime()
    vim.cmd('KiwiRun')
    local streamed = wait(function()
      local s = buf_text('kiwi://output')
      return s and s:find('started', 1, true) ~= nil
    end)
    local s = buf_text('kiwi://output') or ''
    check('output streams while the tool runs (no result yet)', streamed and not s:find('──', 1, true), s)
    vim.cmd('KiwiRun!')
    local stopped = wait(function()
      local s2 = buf_text('kiwi://output')
      return s2 and (s2:find('── cancelled', 1, true) or s2:find('── error (cancelled)', 1, true))
    end)
    check(
      ':KiwiRun! cancels the run',
      stopped and (vim.loop.hrtime() - t0) / 1e9 < 30,
      { seconds = (vim.loop.hrtime() - t0) / 1e9, output = buf_text('kiwi://output') }
    )

    -- 7. :KiwiEnv on the tool: the chain down to the primitive.
    vim.api.nvim_set_current_buf(echo)
    vim.cmd('KiwiEnv')
    local env_ok = wait(function()
      local e = buf_text('kiwi://environment')
      return e and e:find('rt/py_rt', 1, true) and e:find('subprocess', 1, true)
    end)
    check(':KiwiEnv shows the chain (text/echo → rt/py_rt → subprocess)', env_ok, buf_text('kiwi://environment'))
    -- Readable text, not markdown source: no `**`, backticks or table pipes; read-only.
    local env_text = buf_text('kiwi://environment') or ''
    local env_buf = vim.fn.bufnr('kiwi://environment')
    check(':KiwiEnv is readable text (no markdown markup), not modifiable',
      env_ok and not env_text:find('**', 1, true) and not env_text:find('`', 1, true)
        and not env_text:find('\n|', 1, true) and vim.bo[env_buf].modifiable == false,
      { text = env_text, modifiable = env_buf ~= -1 and vim.bo[env_buf].modifiable })

    -- 8. :KiwiValidate on the directive: its problems in the quickfix list.
    vim.api.nvim_set_current_buf(greet)
    vim.fn.setqflist({}, 'r')
    vim.cmd('KiwiValidate')
    local function qf_codes()
      return vim.tbl_map(function(i)
        return i.text
      end, vim.fn.getqflist())
    end
    check(':KiwiValidate lists K003 in the quickfix list', wait(function()
      for _, x in ipairs(qf_codes()) do
        if x:find('K003', 1, true) then
          return true
        end
      end
    end), qf_codes())

    -- 8b. :KiwiInit creates the user space (KIWI_USERSPACE_DIR is a temp dir of the test).
    local user = assert(vim.env.KIWI_USERSPACE_DIR)
    vim.cmd('KiwiInit')
    check(':KiwiInit writes the user space (config.yaml)', wait(function()
      return vim.fn.filereadable(user .. '/config.yaml') == 1
    end), vim.fn.glob(user .. '/*', false, true))
  end

  -- 9. files outside .ai/ are left alone, quietly.
  local n_clients = #all_clients()
  local outside = edit(proj .. '/README.md')
  local py = edit(proj .. '/script.py')
  vim.wait(500)
  check('no client for files outside .ai/', kiwi_client(outside) == nil and kiwi_client(py) == nil
    and #all_clients() == n_clients, { clients = #all_clients(), before = n_clients })

  if full then
    -- 10. the help file: :helptags accepts it (no duplicate tags) and :help finds the commands.
    local help = assert(vim.env.KIWI_HELP)
    local ok_tags, tags_err = pcall(vim.cmd, 'helptags ' .. vim.fn.fnameescape(help .. '/doc'))
    local tags = vim.fn.filereadable(help .. '/doc/tags') == 1 and vim.fn.readfile(help .. '/doc/tags') or {}
    local names = {}
    for _, l in ipairs(tags) do
      names[l:match('^[^\t]+')] = true
    end
    local want_tags = { 'kiwi.txt', ':KiwiRun', ':KiwiRun!', ':KiwiCancel', ':KiwiEnv', ':KiwiValidate', ':KiwiInit', 'kiwi.setup()', 'kiwi-lsp-config' }
    local missing = vim.tbl_filter(function(t)
      return not names[t]
    end, want_tags)
    check(':helptags works on doc/kiwi.txt and has the command tags', ok_tags and #missing == 0, { err = tags_err, missing = missing })
    vim.opt.runtimepath:prepend(help)
    local ok_help = pcall(vim.cmd, 'help :KiwiEnv')
    check(':help :KiwiEnv opens kiwi.txt', ok_help and vim.fn.expand('%:t') == 'kiwi.txt', vim.fn.expand('%:p'))
    pcall(vim.cmd, 'helpclose')

    -- 11. 0.12 bundles the markdown parser: the injection query parses and yields the XML range.
    if nvim012 then
      local qtext = table.concat(vim.fn.readfile(assert(vim.env.KIWI_GRAMMAR)), '\n')
      local ok_q, query = pcall(vim.treesitter.query.parse, 'markdown', qtext)
      check('the injection query parses in Neovim', ok_q, query)
      local function injected(bufnr, q)
        local parser = vim.treesitter.get_parser(bufnr, 'markdown')
        local tree = parser:parse()[1]
        local found = {}
        for _, match, metadata in q:iter_matches(tree:root(), bufnr, 0, -1) do
          for id, nodes in pairs(match) do
            if q.captures[id] == 'injection.content' then
              nodes = type(nodes) == 'table' and nodes or { nodes }
              for _, node in ipairs(metadata['injection.language'] == 'xml' and nodes or {}) do
                local sr, sc, er, ec = node:range()
                table.insert(found, { lang = metadata['injection.language'], range = { sr, sc, er, ec } })
              end
            end
          end
        end
        return found
      end
      if ok_q then
        local open = find(greet, '```xml')
        local close
        for i, l in ipairs(vim.api.nvim_buf_get_lines(greet, open + 1, -1, false)) do
          if l == '```' then
            close = open + i
            break
          end
        end
        local got = injected(greet, query)
        check(
          'the injection query yields exactly the XML of greet.md (rows ' .. (open + 1) .. '..' .. tostring(close) .. ')',
          #got == 1 and got[1].lang == 'xml' and vim.deep_equal(got[1].range, { open + 1, 0, close, 0 }),
          got
        )
      end
      -- The plugin's queries/markdown/injections.scm (`;; extends`) is on top of the bundled one:
      -- a fence with no info string holding a directive is injected too.
      local bare = vim.api.nvim_create_buf(false, true)
      vim.api.nvim_buf_set_lines(bare, 0, -1, false, { '# X', '', '```', '<directive name="x">', '</directive>', '```' })
      local rtq = vim.treesitter.query.get('markdown', 'injections')
      local got = rtq and injected(bare, rtq) or {}
      check(
        "the plugin's ;; extends query is loaded: a bare fence with a directive is XML",
        #got == 1 and got[1].lang == 'xml' and vim.deep_equal(got[1].range, { 3, 0, 5, 0 }),
        { got = got, files = vim.treesitter.query.get_files('markdown', 'injections') }
      )
    end
  end
  -- 9b. completion in rye's hierarchical grant `<tool>…</tool>` (issue 27: nothing came there;
  -- `id="` offered library modules; Neovim showed the whole list): the answer holds only the
  -- tools matching what is typed, each edit starting where the typed id starts, so Neovim's
  -- own filter (the omnifunc's prefix from the edit's start) keeps them.
  if full then
    vim.api.nvim_set_current_buf(greet)
    local prow = find(greet, '</permissions>')
    local typed_line = '      <execute><tool>text.ec</tool></execute>'
    vim.api.nvim_buf_set_lines(greet, prow, prow, false, { typed_line })
    local col = typed_line:find('text.ec', 1, true) - 1
    local items = {}
    wait(function()
      local res = vim.lsp.buf_request_sync(greet, 'textDocument/completion', {
        textDocument = { uri = vim.uri_from_bufnr(greet) },
        position = { line = prow, character = col + #'text.ec' },
      }, 5000)
      for _, r in pairs(res or {}) do
        local result = r.result or {}
        items = result.items or result
      end
      return #items > 0
    end)
    local labels = vim.tbl_map(function(i)
      return i.label
    end, items)
    local starts = vim.tbl_map(function(i)
      return i.textEdit and i.textEdit.range.start.character
    end, items)
    check('completion inside <tool>…</tool> offers the matching tool only, in rye\'s dotted spelling',
      vim.deep_equal(labels, { 'text.echo' }), labels)
    check('each completion edit starts where the typed id starts (the client filters by it)',
      #starts > 0 and vim.tbl_count(vim.tbl_filter(function(x)
        return x ~= col
      end, starts)) == 0, { starts = starts, col = col })
    if vim.lsp.util.text_document_completion_list_to_complete_items then
      local words = vim.tbl_map(function(i)
        return i.word
      end, vim.lsp.util.text_document_completion_list_to_complete_items(items, 'text.ec'))
      check("0.7's omnifunc filter keeps it", vim.deep_equal(words, { 'text.echo' }), words)
    end
    vim.api.nvim_buf_set_lines(greet, prow, prow + 1, false, {})
  end

  -- 9c. the attached agent (issue 27): :KiwiAgentConfig prints the MCP config for the user's
  -- agent plugin, `kiwi mcp --attach --socket S` with S the language server's endpoint (a
  -- socket of mode 0600); the cursor's moves reach the server (kiwi/activeItem).
  if full then
    vim.api.nvim_set_current_buf(greet)
    local cmds = require('kiwi.commands')
    cmds.last_agent_config = nil
    vim.cmd('KiwiAgentConfig')
    wait(function()
      return cmds.last_agent_config
    end)
    local cfg = cmds.last_agent_config and vim.fn.json_decode(cmds.last_agent_config)
    local kiwi = cfg and cfg.mcpServers and cfg.mcpServers.kiwi
    local socket = kiwi and kiwi.args and kiwi.args[4]
    local st = socket and (vim.uv or vim.loop).fs_stat(socket)
    check(':KiwiAgentConfig prints kiwi mcp --attach --socket <the endpoint> for the agent plugin',
      kiwi ~= nil and kiwi.command == vim.fn.exepath('kiwi') and kiwi.args[1] == 'mcp' and kiwi.args[2] == '--attach'
        and kiwi.args[3] == '--socket' and st ~= nil and st.type == 'socket' and st.mode % 512 == 384,
      { cfg = cfg, stat = st })
    local shown = vim.fn.bufnr('kiwi://agent-config')
    check('the config is shown in kiwi://agent-config',
      shown ~= -1 and table.concat(vim.api.nvim_buf_get_lines(shown, 0, -1, false), '\n'):find('--attach', 1, true) ~= nil)
  end

  -- 10. formatting through Neovim's own command (vim.lsp.buf.format; formatting_sync in 0.7):
  -- a badly indented step of greet.md is indented again, nothing else changes.
  if full then
    vim.api.nvim_set_current_buf(greet)
    local before = vim.api.nvim_buf_get_lines(greet, 0, -1, false)
    local row = find(greet, '<step name="say">')
    vim.api.nvim_buf_set_lines(greet, row, row + 1, false, { '<step name="say">' })
    if vim.lsp.buf.format then
      vim.lsp.buf.format({ bufnr = greet, timeout_ms = timeout })
    else
      vim.lsp.buf.formatting_sync(nil, timeout)
    end
    local after = vim.api.nvim_buf_get_lines(greet, 0, -1, false)
    check('formatting indents the step again (and changes nothing else)', vim.deep_equal(before, after), {
      row = row,
      line = after[row + 1],
    })
  end
end

local function finish()
  for _, c in pairs(all_clients()) do
    if vim.fn.has('nvim-0.11') == 1 then
      c:stop()
    else
      c.stop()
    end
  end
  vim.wait(2000, function()
    return #all_clients() == 0
  end, 50)
  out(failures == 0 and '--- all checks passed' or ('--- ' .. failures .. ' check(s) failed'))
  if failures == 0 then
    vim.cmd('qall!')
  else
    vim.cmd('cquit! 1')
  end
end

vim.schedule(function()
  local ok, err = pcall(main)
  if not ok then
    check('the test ran to its end', false, err)
  end
  finish()
end)
