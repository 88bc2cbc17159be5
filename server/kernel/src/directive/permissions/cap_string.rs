//! Capability strings: `<cap>kiwi.execute.tool.docs.*</cap>` (`rye.` too).

use super::{action_alias, Reader, Style, ACTIONS, ITEM_TYPE_NAMES, SYSTEM_ACTIONS};
use crate::diag::{Code, Diagnostic};
use crate::directive::checks::whole_lines;
use crate::directive::{Element, Resource};
use crate::ids::ItemType;
use crate::text::TextRange;

impl<'a> Reader<'a> {
    /// `<cap>kiwi.execute.tool.docs.*</cap>`.
    pub(super) fn cap_string(&mut self, el: &Element, deny: bool) {
        let remove = whole_lines(self.text, el.range);
        let Some(t) = el.spanned_text() else {
            self.diags.push(Diagnostic::new(
                Code::P201,
                el.name_range,
                "empty `<cap>`: it grants nothing",
            ));
            return;
        };
        // Exact sub-ranges when the raw text is the value (no entity references).
        let exact = self.text.get(t.range.start..t.range.end) == Some(t.value.as_str());
        let mut segs: Vec<(&str, TextRange)> = Vec::new();
        let mut off = 0;
        for s in t.value.split('.') {
            let r = if exact {
                TextRange::new(t.range.start + off, t.range.start + off + s.len())
            } else {
                t.range
            };
            segs.push((s, r));
            off += s.len() + 1;
        }
        let (prefix, prefix_range) = segs[0];
        if !matches!(prefix, "kiwi" | "rye" | "kiwi-mcp") {
            self.diags.push(Diagnostic::new(
                Code::P201,
                prefix_range,
                format!("a capability string starts with `kiwi.` (or `rye.`), not `{prefix}.`; it grants nothing"),
            ));
            self.push(
                "",
                Resource::Items(None),
                t.value.clone(),
                deny,
                el.range,
                false,
                Style::Cap {
                    prefix: "kiwi".into(),
                },
                remove,
                t.range,
            );
            return;
        }
        let style = Style::Cap {
            prefix: prefix.to_string(),
        };
        let mut valid = true;
        let verbs: Vec<String> = match segs.get(1) {
            None => {
                self.diags.push(Diagnostic::new(
                    Code::P201,
                    t.range,
                    format!("`{}` names no action (`{prefix}.execute.tool.ID`)", t.value),
                ));
                return;
            }
            Some(&(v, r)) => match v {
                "execute" => vec!["run".to_string()],
                v if ACTIONS.contains(&v) => vec![v.to_string()],
                "sign" | "fetch" | "help" => {
                    let (verbs, alias) = action_alias(v).expect("an alias");
                    self.alias = Some(alias.to_string());
                    verbs.iter().map(|v| v.to_string()).collect()
                }
                _ => {
                    let known: Vec<&str> = ACTIONS
                        .iter()
                        .copied()
                        .chain(["execute", "sign", "fetch", "help"])
                        .collect();
                    self.unknown(r, "action", v, &known);
                    valid = false;
                    vec![v.to_string()]
                }
            },
        };
        let (resource, pattern, target) = match segs.get(2) {
            None => (Resource::Items(None), "*".to_string(), t.range),
            Some(&("*", r)) => (Resource::Items(None), "*".to_string(), r),
            Some(&(ty, r)) => match ItemType::parse(ty) {
                Some(it) => {
                    let rest: Vec<&str> = segs[3..].iter().map(|s| s.0).collect();
                    let pat = if rest.is_empty() {
                        "*".to_string()
                    } else {
                        rest.join("/")
                    };
                    let target = match (segs.get(3), segs.last()) {
                        (Some(a), Some(b)) => TextRange::new(a.1.start, b.1.end),
                        _ => r,
                    };
                    (Resource::Items(Some(it)), pat, target)
                }
                None => {
                    let known: Vec<&str> = ITEM_TYPE_NAMES.iter().copied().chain(["*"]).collect();
                    self.unknown(r, "item type", ty, &known);
                    valid = false;
                    (
                        Resource::Items(None),
                        segs[2..].iter().map(|s| s.0).collect::<Vec<_>>().join("/"),
                        r,
                    )
                }
            },
        };
        if let Some(verb) = verbs.iter().find(|verb| {
            resource == Resource::Items(Some(ItemType::System))
                && valid
                && !SYSTEM_ACTIONS.contains(&verb.as_str())
                && *verb != "*"
                && *verb != "help"
        }) {
            self.diags.push(Diagnostic::new(
                Code::P202,
                segs[1].1,
                format!("`{verb}` is not allowed on `system` items: they are read-only"),
            ));
            valid = false;
        }
        if valid {
            self.id_checks(&pattern, target);
        }
        for verb in &verbs {
            self.push(
                verb,
                resource.clone(),
                pattern.clone(),
                deny,
                el.range,
                valid,
                style.clone(),
                remove,
                t.range,
            );
        }
    }
}
