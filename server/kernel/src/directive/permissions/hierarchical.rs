//! The hierarchical form: `<execute><tool>rye.file-system.*</tool></execute>`, `<search>*</search>`.

use super::{action_alias, undot, Reader, Style, ITEM_TYPE_NAMES, SYSTEM_ACTIONS};
use crate::diag::{closest, did_you_mean, Code, Diagnostic};
use crate::directive::checks::whole_lines;
use crate::directive::{Element, Resource};
use crate::ids::ItemType;

impl<'a> Reader<'a> {
    /// `<execute><tool>PATTERN</tool></execute>` and `<execute>*</execute>`.
    pub(super) fn hierarchical(&mut self, el: &Element, deny: bool) {
        let verbs: Vec<String> = match el.name.as_str() {
            "execute" => vec!["run".into()],
            "sign" | "fetch" => {
                let (verbs, _) = action_alias(&el.name).expect("an alias");
                self.alias = Some(if el.name == "sign" {
                    "rye's `<sign>`, read as `validate`".to_string()
                } else {
                    "rye's `<fetch>`, read as `search` and `load`".to_string()
                });
                verbs.iter().map(|v| v.to_string()).collect()
            }
            other => vec![other.to_string()],
        };
        let valid_verb = true;
        let text = el.trimmed_text();
        if el.children.is_empty() {
            if text == "*" {
                let target = el.text_range.unwrap_or(el.name_range);
                for verb in &verbs {
                    self.push(
                        verb,
                        Resource::Items(None),
                        "*".into(),
                        deny,
                        el.range,
                        valid_verb,
                        Style::Hierarchical { dotted: false },
                        whole_lines(self.text, el.range),
                        target,
                    );
                }
            } else {
                self.diags.push(Diagnostic::new(
                    Code::P201,
                    el.text_range.unwrap_or(el.name_range),
                    format!("`<{}>` grants nothing: write `*`, or item type elements such as `<tool>docs/*</tool>`", el.name),
                ));
            }
            return;
        }
        if !text.is_empty() {
            if let Some(r) = el.text_range {
                self.diags.push(Diagnostic::new(
                    Code::P201,
                    r,
                    format!(
                        "text inside `<{}>` beside item type elements is ignored",
                        el.name
                    ),
                ));
            }
        }
        let only_child = el.children.len() == 1;
        for c in &el.children {
            let t = match ItemType::parse(&c.name) {
                Some(t) => t,
                None => {
                    let sug = closest(&c.name, ITEM_TYPE_NAMES.iter().copied());
                    let mut d = Diagnostic::new(
                        Code::P201,
                        c.name_range,
                        format!(
                            "unknown item type `<{}>` in `<{}>`, which grants nothing (one of directive, tool, knowledge, system){}",
                            c.name, el.name, did_you_mean(sug)
                        ),
                    );
                    if let Some(s) = sug {
                        d = d.fix(crate::directive::schema::rename_element(c, s));
                    }
                    self.diags.push(d);
                    continue;
                }
            };
            for a in &c.attrs {
                self.diags.push(Diagnostic::new(
                    Code::P201,
                    a.name_range,
                    format!(
                        "unknown attribute `{}` on `<{}>`: the pattern is the element's text",
                        a.name, c.name
                    ),
                ));
            }
            let Some(pat) = c.spanned_text() else {
                self.diags.push(Diagnostic::new(
                    Code::P201,
                    c.name_range,
                    format!("`<{}>` names no pattern (write `*` for any)", c.name),
                ));
                continue;
            };
            let (pattern, dotted) = undot(&pat.value);
            let mut valid = valid_verb;
            if let Some(verb) = verbs
                .iter()
                .find(|v| t == ItemType::System && !SYSTEM_ACTIONS.contains(&v.as_str()))
            {
                self.diags.push(Diagnostic::new(
                    Code::P202,
                    c.name_range,
                    format!("`{verb}` is not allowed on `system` items: they are read-only"),
                ));
                valid = false;
            }
            self.id_checks(&pattern, pat.range);
            let remove = if only_child {
                whole_lines(self.text, el.range)
            } else {
                whole_lines(self.text, c.range)
            };
            for verb in &verbs {
                self.push(
                    verb,
                    Resource::Items(Some(t)),
                    pattern.clone(),
                    deny,
                    c.range,
                    valid,
                    Style::Hierarchical { dotted },
                    remove,
                    c.range,
                );
            }
            self.group += 1;
        }
    }
}
