//! `initialized`: file watching registered (when the client allows dynamic registration),
//! then every folder's project and the user space indexed.

use crate::session::Backend;

pub(crate) async fn initialized(b: &Backend) {
    let watch = b.lock().caps.watch_dynamic;
    let (keys, caps) = b.claim_index();
    let this = b.clone();
    tokio::spawn(async move {
        if watch {
            this.register_watchers().await;
        }
        this.index(keys, caps).await;
    });
}
