//! The order of workspace paths, computed on their bytes.

use std::path::Path;

/// The order of [`Path`]'s `Ord` (component by component) for paths without `.`, `..`,
/// repeated or trailing separators, as a workspace's are, computed on the bytes: a
/// separator sorts before any other byte. `Path::cmp` splits both paths into components,
/// which was the larger part of sorting 100,000 items.
pub fn path_order(a: &Path, b: &Path) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    // No path holds a NUL byte: it can stand for the separator.
    let key = |c: u8| {
        if std::path::is_separator(c as char) {
            0
        } else {
            c
        }
    };
    let (a, b) = (
        a.as_os_str().as_encoded_bytes(),
        b.as_os_str().as_encoded_bytes(),
    );
    let same = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    match (a.get(same), b.get(same)) {
        (Some(x), Some(y)) => key(*x).cmp(&key(*y)),
        (None, None) => Ordering::Equal,
        (None, Some(_)) => Ordering::Less,
        (Some(_), None) => Ordering::Greater,
    }
}

#[cfg(test)]
mod path_order_tests {
    use super::path_order;
    use proptest::prelude::*;
    use std::path::PathBuf;

    fn path() -> impl Strategy<Value = PathBuf> {
        (
            any::<bool>(),
            // A component never is `.` or `..` (a workspace path has none).
            prop::collection::vec("[a\\-_0é~][a.\\-_0é~]{0,2}", 1..5),
        )
            .prop_map(|(absolute, parts)| {
                let joined = parts.join("/");
                PathBuf::from(if absolute {
                    format!("/{joined}")
                } else {
                    joined
                })
            })
    }

    proptest! {
        /// The same order as `Path::cmp`.
        #[test]
        fn equals_path_cmp(a in path(), b in path()) {
            prop_assert_eq!(path_order(&a, &b), a.cmp(&b), "{:?} {:?}", a, b);
        }
    }
}
