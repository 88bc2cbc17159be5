-- The checks' harness shared by the Neovim tests (tests/nvim/*_test.lua): one "ok"/"FAIL" line
-- per check, the diagnostic codes of a buffer, and the run's end (qall! when every check passed,
-- cquit! otherwise, which the shell side reads). Loaded with dofile(vim.env.KIWI_HARNESS).
local M = { failures = 0, timeout = tonumber(vim.env.KIWI_TIMEOUT or '20000') }

function M.out(s)
  io.stdout:write(s, '\n')
end

function M.check(name, ok, seen)
  if ok then
    M.out('ok   ' .. name)
  else
    M.failures = M.failures + 1
    M.out('FAIL ' .. name .. (seen ~= nil and ('\n     seen: ' .. vim.inspect(seen)) or ''))
  end
end

-- The codes of a buffer's diagnostics (as strings; 0.7 keeps them under user_data).
function M.codes(bufnr)
  local seen = {}
  for _, d in ipairs(vim.diagnostic.get(bufnr)) do
    local code = d.code or (d.user_data and d.user_data.lsp and d.user_data.lsp.code)
    if code then
      seen[#seen + 1] = tostring(code)
    end
  end
  return seen
end

-- Run `main` (an error in it is one more failure), then end Neovim with the verdict.
function M.finish(main)
  local ok, err = pcall(main)
  if not ok then
    M.failures = M.failures + 1
    M.out('FAIL ' .. tostring(err))
  end
  if M.failures == 0 then
    M.out('--- all checks passed')
    vim.cmd('qall!')
  else
    M.out('--- ' .. M.failures .. ' check(s) failed')
    vim.cmd('cquit!')
  end
end

return M
