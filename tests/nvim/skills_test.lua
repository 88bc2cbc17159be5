-- Run by tests/nvim/skills.sh: open a SKILL.md of a project without `.ai/` and check what the
-- user sees (the server attached; hover on its script and on a key; a ▶ Run lens on the script
-- file). Every wait is bounded.
local file = assert(vim.env.KIWI_FILE, 'KIWI_FILE not set')
local proj = assert(vim.env.KIWI_PROJ, 'KIWI_PROJ not set')
local h = dofile(assert(vim.env.KIWI_HARNESS, 'KIWI_HARNESS not set'))
local check, timeout = h.check, h.timeout

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

--- Wait until the run output buffer (kiwi://output) shows `want`: whether it did, and its text.
local function output_shows(want)
  local out = ''
  vim.wait(timeout, function()
    local b = vim.fn.bufnr('kiwi://output')
    if b ~= -1 then
      out = table.concat(vim.api.nvim_buf_get_lines(b, 0, -1, false), '\n')
    end
    return out:find(want, 1, true) ~= nil
  end, 100)
  return out:find(want, 1, true) ~= nil, out
end

local function main()
  vim.cmd('edit ' .. vim.fn.fnameescape(file))
  local buf = vim.api.nvim_get_current_buf()
  vim.wait(timeout, function()
    return #(vim.lsp.get_clients or vim.lsp.get_active_clients)({ bufnr = buf }) > 0
  end, 50)
  local clients = (vim.lsp.get_clients or vim.lsp.get_active_clients)({ bufnr = buf })
  check('a SKILL.md in .agents/skills/ of a project without .ai/ gets the server', #clients > 0,
    vim.bo[buf].filetype)
  check('rooted at the project', #clients > 0 and clients[1].config.root_dir == proj,
    #clients > 0 and clients[1].config.root_dir)

  local text = hover_at(buf, 'scripts/build.py', 9)
  for _, want in ipairs({ 'a script of the skill `report`', 'KIWI_PYTHON', proj .. '/.venv/bin/python' }) do
    check('hover on the script shows ' .. want, text and text:find(want, 1, true) ~= nil, text)
  end
  -- A PEP 723 script: it runs through uv, and the hover says so with uv's place in the trail.
  local inline = hover_at(buf, 'scripts/inline.py', 9)
  for _, want in ipairs({ 'uv run --script', 'PEP 723' }) do
    check('hover on the PEP 723 script shows ' .. want, inline and inline:find(want, 1, true) ~= nil, inline)
  end
  -- ▶ Run on it from the SKILL.md (through the LSP's run command): uv runs it.
  local inline_lens
  vim.wait(timeout, function()
    local res = vim.lsp.buf_request_sync(buf, 'textDocument/codeLens', {
      textDocument = { uri = vim.uri_from_bufnr(buf) },
    }, 2000)
    for _, r in pairs(res or {}) do
      for _, l in ipairs(r.result or {}) do
        local a = l.command and l.command.arguments and l.command.arguments[1]
        if l.command.title == '▶ Run' and type(a) == 'table' and tostring(a.path):find('inline.py', 1, true) then
          inline_lens = l
        end
      end
    end
    return inline_lens ~= nil
  end, 100)
  check('the SKILL.md has a ▶ Run lens on the PEP 723 script', inline_lens ~= nil)
  if inline_lens then
    local cmd = vim.deepcopy(inline_lens.command)
    cmd.arguments[1].args = { 'Q4' }
    local cl = (vim.lsp.get_clients or vim.lsp.get_active_clients)({ bufnr = buf })[1]
    vim.lsp.commands['kiwi.runTool'](cmd, { bufnr = buf, client_id = cl.id })
    local ok, out = output_shows("inline ['Q4']")
    check('▶ Run of the PEP 723 script runs it through uv', ok, out)
  end
  local key = hover_at(buf, 'description:', 2)
  check('hover on description counts against its limit', key and key:find('/ 1024 characters', 1, true) ~= nil, key)

  vim.cmd('edit ' .. vim.fn.fnameescape(proj .. '/.agents/skills/report/scripts/build.py'))
  local sb = vim.api.nvim_get_current_buf()
  local titles, lenses = {}, {}
  vim.wait(timeout, function()
    local res = vim.lsp.buf_request_sync(sb, 'textDocument/codeLens', {
      textDocument = { uri = vim.uri_from_bufnr(sb) },
    }, 2000)
    for _, r in pairs(res or {}) do
      for _, l in ipairs(r.result or {}) do
        titles[#titles + 1] = l.command and l.command.title
        lenses[#lenses + 1] = l
      end
    end
    return #titles > 0
  end, 100)
  check('the script file has a ▶ Run lens', vim.tbl_contains(titles, '▶ Run (report/scripts/build.py)'), titles)
  check('and a ▶ Run… lens', vim.tbl_contains(titles, '▶ Run…'), titles)
  -- ▶ Run… asks for the arguments (vim.ui.input, answered here) and runs with them split as a
  -- shell splits words.
  local lens
  for _, l in ipairs(lenses) do
    if l.command and l.command.title == '▶ Run…' then
      lens = l
    end
  end
  if lens then
    local input = vim.ui.input
    vim.ui.input = function(_, on_confirm)
      on_confirm("Q3 'north east'")
    end
    local client = (vim.lsp.get_clients or vim.lsp.get_active_clients)({ bufnr = sb })[1]
    vim.lsp.commands['kiwi.runTool'](lens.command, { bufnr = sb, client_id = client.id })
    vim.ui.input = input
    local ok, out = output_shows("built ['Q3', 'north east']")
    check('▶ Run… runs the script with the arguments typed', ok, out)
  end

  -- VS Code's custom agent file (issue 28, item 8): served on its own.
  vim.cmd('edit ' .. vim.fn.fnameescape(proj .. '/.github/agents/plan.agent.md'))
  local ab = vim.api.nvim_get_current_buf()
  vim.wait(timeout, function()
    return #(vim.lsp.get_clients or vim.lsp.get_active_clients)({ bufnr = ab }) > 0
  end, 50)
  local ac = (vim.lsp.get_clients or vim.lsp.get_active_clients)({ bufnr = ab })
  check('an .agent.md in .github/agents/ gets the server, rooted at the project',
    #ac > 0 and ac[1].config.root_dir == proj, #ac > 0 and ac[1].config.root_dir)
  local seen
  vim.wait(timeout, function()
    for _, d in ipairs(vim.diagnostic.get(ab)) do
      if d.code == 'S821' then
        seen = d.message
      end
    end
    return seen ~= nil
  end, 50)
  check('its unknown target is S821', seen and seen:find('github-copilot', 1, true) ~= nil, seen)
  local tools = hover_at(ab, 'tools:', 1)
  check('hover on tools says who reads it', tools and tools:find('VS Code and GitHub Copilot', 1, true) ~= nil, tools)

  -- A project's AGENTS.md gets the same server; references start on a mention there.
  vim.cmd('edit ' .. vim.fn.fnameescape(proj .. '/AGENTS.md'))
  local ag = vim.api.nvim_get_current_buf()
  vim.wait(timeout, function()
    return #(vim.lsp.get_clients or vim.lsp.get_active_clients)({ bufnr = ag }) > 0
  end, 50)
  local agc = (vim.lsp.get_clients or vim.lsp.get_active_clients)({ bufnr = ag })
  check('AGENTS.md gets the project\'s server', #agc > 0 and agc[1].config.root_dir == proj,
    #agc > 0 and agc[1].config.root_dir)
  local in_skill = false
  vim.wait(timeout, function()
    local res = vim.lsp.buf_request_sync(ag, 'textDocument/references', {
      textDocument = { uri = vim.uri_from_bufnr(ag) },
      position = { line = 0, character = #'Skills: `re' },
      context = { includeDeclaration = true },
    }, 2000)
    for _, r in pairs(res or {}) do
      for _, loc in ipairs(r.result or {}) do
        if loc.uri == vim.uri_from_fname(file) then
          in_skill = true
        end
      end
    end
    return in_skill
  end, 100)
  check('references of `report` from AGENTS.md include its SKILL.md', in_skill)

  -- Issue 28, item 4: rename the skill from its `name:`. The folder moves and the mentions in
  -- the other skill and in AGENTS.md follow (vim.lsp.buf.rename). Neovim before 0.9 cannot
  -- rename a folder in a workspace edit (E502): the server refuses it, saying why (0.7 drops a
  -- rename's error silently, so the request is sent directly to read it).
  vim.cmd('edit ' .. vim.fn.fnameescape(file))
  local sk = vim.api.nvim_get_current_buf()
  local row
  for i, l in ipairs(vim.api.nvim_buf_get_lines(sk, 0, -1, false)) do
    if l == 'name: report' and not row then
      row = i
    end
  end
  vim.api.nvim_win_set_cursor(0, { row, #'name: r' })
  local function buffer_text(path)
    local b = vim.fn.bufnr(path)
    if b == -1 then
      return table.concat(vim.fn.readfile(path), '\n')
    end
    return table.concat(vim.api.nvim_buf_get_lines(b, 0, -1, false), '\n')
  end
  local v = vim.version()
  if v.major == 0 and v.minor < 9 then
    local res = vim.lsp.buf_request_sync(sk, 'textDocument/rename', {
      textDocument = { uri = vim.uri_from_bufnr(sk) },
      position = { line = row - 1, character = #'name: r' },
      newName = 'summary',
    }, timeout)
    local msg
    for _, r in pairs(res or {}) do
      local e = r.err or r.error -- 0.7 says `error`
      msg = e and e.message
    end
    check('a skill rename is refused before Neovim 0.9, saying why', msg and msg:find('Neovim before 0.9', 1, true) ~= nil, res)
    check('nothing was renamed', vim.fn.isdirectory(proj .. '/.agents/skills/report') == 1
      and buffer_text(proj .. '/.agents/skills/publish/SKILL.md'):find('/report', 1, true) ~= nil)
    return
  end
  vim.lsp.buf.rename('summary')
  local moved = vim.wait(timeout, function()
    return vim.fn.isdirectory(proj .. '/.agents/skills/summary') == 1
  end, 50)
  check('rename moves the folder to .agents/skills/summary',
    moved and vim.fn.isdirectory(proj .. '/.agents/skills/report') == 0,
    vim.fn.glob(proj .. '/.agents/skills/*', false, true))
  local publish = buffer_text(proj .. '/.agents/skills/publish/SKILL.md')
  check('the other skill mentions /summary (the bare word "report" is no mention: left)',
    publish:find('made with `/summary`', 1, true) ~= nil and publish:find('Run /summary first', 1, true) ~= nil
      and publish:find('Publish a report', 1, true) ~= nil, publish)
  local agents = buffer_text(proj .. '/AGENTS.md')
  check('AGENTS.md mentions `summary`', agents:find('`summary`', 1, true) ~= nil, agents)
  local renamed = buffer_text(proj .. '/.agents/skills/summary/SKILL.md')
  check('the skill is named summary', renamed:find('name: summary', 1, true) ~= nil, renamed)
  vim.cmd('silent! wall')
  check('after :wall no file is left in the old folder', vim.fn.isdirectory(proj .. '/.agents/skills/report') == 0,
    vim.fn.glob(proj .. '/.agents/skills/report/**', false, true))

  -- And a rename started on the mention in AGENTS.md (saved: its edits are made on the disk's text).
  vim.cmd('buffer ' .. ag)
  vim.api.nvim_win_set_cursor(0, { 1, #'Skills: `su' })
  vim.lsp.buf.rename('digest')
  moved = vim.wait(timeout, function()
    return vim.fn.isdirectory(proj .. '/.agents/skills/digest') == 1
  end, 50)
  check('rename from AGENTS.md moves the folder to .agents/skills/digest', moved,
    vim.fn.glob(proj .. '/.agents/skills/*', false, true))
  check('AGENTS.md mentions `digest`', buffer_text(proj .. '/AGENTS.md'):find('`digest`', 1, true) ~= nil,
    buffer_text(proj .. '/AGENTS.md'))
  vim.cmd('silent! wall')
end

h.finish(main)
