//! A hook for tests: hold the loads of a project while a test looks at a server.

use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

static HELD: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());
static RELEASED: Condvar = Condvar::new();

/// Holds the loads of one project until dropped.
pub struct LoadHold(PathBuf);

/// Hold every [`super::Workspace::load_all`] of `project` until the hold is dropped.
pub fn hold_loads(project: &Path) -> LoadHold {
    let mut held = HELD.lock().unwrap_or_else(|e| e.into_inner());
    held.push(project.to_path_buf());
    LoadHold(project.to_path_buf())
}

impl Drop for LoadHold {
    fn drop(&mut self) {
        let mut held = HELD.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = held.iter().position(|p| *p == self.0) {
            held.remove(i);
        }
        RELEASED.notify_all();
    }
}

pub(super) fn wait_while_held(project: Option<&Path>) {
    let Some(project) = project else {
        return;
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut held = HELD.lock().unwrap_or_else(|e| e.into_inner());
    while held.iter().any(|p| p == project) {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return;
        }
        held = RELEASED
            .wait_timeout(held, left)
            .unwrap_or_else(|e| e.into_inner())
            .0;
    }
}
