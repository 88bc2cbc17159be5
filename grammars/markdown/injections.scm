; Kiwi directives: the XML inside a directive's fence is injected as `xml`.
;
; A directive is a fenced code block whose info string is `xml`, or a fence with no info
; string whose content starts with `<directive`. The injected range is the fence's content:
; the lines between the opening and the closing fence lines.
;
; Grammar: tree-sitter-md's block grammar (`markdown`). Neovim uses a copy of this file with
; `;; extends` on its first line (editors/neovim/queries/markdown/injections.scm), kept
; identical by server/kernel/tests/grammars.rs.

((fenced_code_block
  (info_string
    (language) @_kiwi_lang)
  (code_fence_content) @injection.content)
  (#match? @_kiwi_lang "^[xX][mM][lL]$")
  (#set! injection.language "xml"))

; No info string: the opening delimiter is followed directly by the line end. (Not the
; negated field `!info_string`: the markdown parser bundled with Neovim has no such field.)
((fenced_code_block
  (fenced_code_block_delimiter)
  .
  (block_continuation)
  .
  (code_fence_content) @injection.content)
  ; `[<]`, not `<`: Neovim reads the pattern as a very magic Vim regex (`<` is a word start).
  (#match? @injection.content "^\\s*[<]directive")
  (#set! injection.language "xml"))
