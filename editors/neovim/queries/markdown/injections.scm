;; extends

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

((fenced_code_block
  !info_string
  (code_fence_content) @injection.content)
  (#match? @injection.content "^\\s*<directive")
  (#set! injection.language "xml"))
