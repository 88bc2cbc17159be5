; Module-level assignments that may declare tool metadata (kiwi never runs the file):
;
;   NAME = value
;   NAME: annotation = value
;
; Only direct children of the module match: an assignment inside a function, a class, an
; `if` or a `try` is not metadata. Which names matter, and which field each one feeds, is the
; FIELDS table in server/kernel/src/tool/mod.rs. For a chained `A = B = value` the kernel
; follows @value down to the last right-hand side.
(module
  (expression_statement
    (assignment
      left: (identifier) @name
      right: (_) @value)))
