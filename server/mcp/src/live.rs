//! What the client follows while the session lasts (issue 16, points 11 and 13): the lists
//! changing on disk (`notifications/prompts|resources/list_changed`), the items it subscribed
//! to (`notifications/resources/updated`), and log messages at the level it asked for.
//!
//! Two clients shapes, one watcher:
//! - a session begun with `initialize` (2025-11-25 and older): notifications go to its peer,
//!   resources are followed with `resources/subscribe`/`unsubscribe`, the log level is set by
//!   `logging/setLevel`;
//! - a `server/discover` client (2026-07-28): notifications ride the `subscriptions/listen`
//!   streams it opened (each with its own filter and uris), and a request asks for log
//!   messages with `_meta` `io.modelcontextprotocol/logLevel`.
//!
//! The kernel's [`Service::generation`] says when any item file was added, changed or
//! removed; the watcher asks it a few times a second (a cheap drain of the inotify queue),
//! and only then compares what changed: the prompt list (the directives, their descriptions
//! and inputs), and each followed item's files. The tool list is the four meta-tools: it never
//! changes, so `tools.listChanged` is not advertised.
#![allow(deprecated)] // logging and resources/subscribe are deprecated in 2026-07-28, not gone

use kiwi_kernel::service::{Service, Session};
use rmcp::model::{
    LoggingLevel, LoggingMessageNotificationParam, ResourceUpdatedNotificationParam,
};
use rmcp::service::{Peer, RequestContext, SubscriptionSink};
use rmcp::RoleServer;
use serde_json::json;
use std::collections::hash_map::DefaultHasher;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How often the disk is looked at for changes.
pub const EVERY: Duration = Duration::from_millis(300);

/// The session's followers. Shared by every clone of the server.
#[derive(Default)]
pub struct Live {
    /// The client of a session begun with `initialize` (known once it sent `initialized`).
    peer: Option<Peer<RoleServer>>,
    /// `resources/subscribe`d uris, with the fingerprint of their files when last looked at.
    subscribed: HashMap<String, u64>,
    /// Open `subscriptions/listen` streams.
    listeners: Vec<Listener>,
    next_listener: u64,
    /// The level `logging/setLevel` asked for; `None`: no log messages (until asked).
    level: Option<LoggingLevel>,
}

struct Listener {
    id: u64,
    sink: SubscriptionSink,
    /// Each followed uri's fingerprint; `None` until first read (no update before that).
    uris: HashMap<String, Option<u64>>,
}

/// The rank of a level (debug lowest).
fn rank(l: LoggingLevel) -> u8 {
    l as u8
}

/// A fingerprint of what `resources/read` of `uri` gives (its files, or the kind of error:
/// an item that goes away changes it too). Read without the session's restrictions: it only
/// tells whether the item changed, never what it holds.
pub fn fingerprint(service: &Service, uri: &str) -> u64 {
    let mut h = DefaultHasher::new();
    match service.read_resource_files(&Session::default(), uri) {
        Ok(files) => files.hash(&mut h),
        Err(e) => e.error.hash(&mut h),
    }
    h.finish()
}

/// A fingerprint of the prompt list (every directive's id, description and inputs).
fn prompts_fingerprint(service: &Service) -> u64 {
    let mut h = DefaultHasher::new();
    service.directives(None).unwrap_or_default().hash(&mut h);
    h.finish()
}

fn lock(live: &Mutex<Live>) -> std::sync::MutexGuard<'_, Live> {
    live.lock().unwrap_or_else(|p| p.into_inner())
}

/// Lock the session's followers.
pub fn guard(live: &Mutex<Live>) -> std::sync::MutexGuard<'_, Live> {
    lock(live)
}

impl Live {
    pub fn set_peer(&mut self, peer: Peer<RoleServer>) {
        self.peer = Some(peer);
    }

    /// Whether a change can be told: a session began (`initialized`), or a listener waits.
    fn can_hear(&self) -> bool {
        self.peer.is_some() || !self.listeners.is_empty()
    }

    pub fn set_level(&mut self, level: LoggingLevel) {
        self.level = Some(level);
    }

    pub fn subscribe(&mut self, uri: String, fp: u64) {
        self.subscribed.insert(uri, fp);
    }

    pub fn unsubscribe(&mut self, uri: &str) -> bool {
        self.subscribed.remove(uri).is_some()
    }

    /// Register a listen stream (its uris not read yet); its id, to remove it when it ends.
    pub fn listen(&mut self, sink: SubscriptionSink, uris: Vec<String>) -> u64 {
        self.next_listener += 1;
        let id = self.next_listener;
        let uris = uris.into_iter().map(|u| (u, None)).collect();
        self.listeners.push(Listener { id, sink, uris });
        id
    }

    /// What a listen stream's uris hold when it begins (those no change has read yet).
    pub fn listened(&mut self, id: u64, fps: HashMap<String, u64>) {
        if let Some(l) = self.listeners.iter_mut().find(|l| l.id == id) {
            for (u, f) in l.uris.iter_mut() {
                if f.is_none() {
                    *f = fps.get(u).copied();
                }
            }
        }
    }

    pub fn unlisten(&mut self, id: u64) {
        self.listeners.retain(|l| l.id != id);
    }
}

/// Send a log message for a request, when its client asked for that level (the request's
/// `_meta` log level, else the session's `logging/setLevel`). The text is redacted.
pub async fn log(
    service: &Service,
    live: &Mutex<Live>,
    ctx: Option<&RequestContext<RoleServer>>,
    level: LoggingLevel,
    text: &str,
) {
    let Some(ctx) = ctx else { return };
    let wanted = ctx.meta.log_level().or_else(|| lock(live).level);
    if wanted.is_none_or(|w| rank(level) < rank(w)) {
        return;
    }
    let text: String = service.secrets().redact(text).chars().take(2000).collect();
    let _ = ctx
        .peer
        .notify_logging_message(
            LoggingMessageNotificationParam::new(level, json!(text)).with_logger("kiwi"),
        )
        .await;
}

/// Watch the disk for the session until the task is aborted. A workspace starts at
/// generation 0 when it is loaded (whichever call loads it first): any later generation is a
/// change the client may not have seen, whenever the watcher first looks.
pub async fn watch(service: Arc<Service>, live: Arc<Mutex<Live>>, every: Duration) {
    let mut seen: u64 = 0;
    // The prompt list's fingerprint at generation `seen`; `None`: not known (a change read
    // while the list was), the next change counts as one of the prompts too.
    let mut prompts: Option<u64> = None;
    let mut first = true;
    loop {
        if !std::mem::take(&mut first) {
            tokio::time::sleep(every).await;
        }
        // Nobody to tell yet (no `initialized`, no listener): a change looked at now would be
        // taken as told and never be. The first look once someone can hear tells it.
        if !lock(&live).can_hear() {
            continue;
        }
        let svc = service.clone();
        let Ok(Ok(generation)) = tokio::task::spawn_blocking(move || svc.generation(None)).await
        else {
            continue;
        };
        if generation == seen && prompts.is_some() {
            continue;
        }
        let svc = service.clone();
        let Ok((fp, after)) = tokio::task::spawn_blocking(move || {
            let fp = prompts_fingerprint(&svc);
            (fp, svc.generation(None).ok())
        })
        .await
        else {
            continue;
        };
        let now = (after == Some(generation)).then_some(fp);
        if generation != seen {
            let prompts_changed = match (prompts, now) {
                (Some(b), Some(p)) => b != p,
                _ => true,
            };
            changed(&service, &live, prompts_changed).await;
        }
        seen = generation;
        prompts = now;
    }
}

/// Tell the client that both lists changed (the active directive, which filters them, did).
pub async fn lists_changed(live: &Mutex<Live>) {
    let (peer, sinks) = {
        let l = lock(live);
        let sinks: Vec<SubscriptionSink> = l.listeners.iter().map(|x| x.sink.clone()).collect();
        (l.peer.clone(), sinks)
    };
    if let Some(p) = &peer {
        let _ = p.notify_prompt_list_changed().await;
        let _ = p.notify_resource_list_changed().await;
    }
    for s in &sinks {
        let _ = s.notify_prompt_list_changed().await;
        let _ = s.notify_resource_list_changed().await;
    }
}

/// Tell the client what changed: the lists, and each followed item whose files changed.
async fn changed(service: &Arc<Service>, live: &Arc<Mutex<Live>>, prompts: bool) {
    let (peer, level, sinks, uris) = {
        let l = lock(live);
        let mut uris: Vec<String> = l.subscribed.keys().cloned().collect();
        for x in &l.listeners {
            uris.extend(x.uris.keys().cloned());
        }
        uris.sort();
        uris.dedup();
        let sinks: Vec<SubscriptionSink> = l.listeners.iter().map(|x| x.sink.clone()).collect();
        (l.peer.clone(), l.level, sinks, uris)
    };
    if let Some(p) = &peer {
        if prompts {
            let _ = p.notify_prompt_list_changed().await;
        }
        let _ = p.notify_resource_list_changed().await;
        if level.is_some_and(|w| rank(LoggingLevel::Notice) >= rank(w)) {
            let what = if prompts {
                "items changed on disk: the prompt and resource lists changed"
            } else {
                "items changed on disk: the resource list changed"
            };
            let _ = p
                .notify_logging_message(
                    LoggingMessageNotificationParam::new(LoggingLevel::Notice, json!(what))
                        .with_logger("kiwi"),
                )
                .await;
        }
    }
    for s in &sinks {
        // Each stream's filter decides; one not accepted is refused by the sink.
        if prompts {
            let _ = s.notify_prompt_list_changed().await;
        }
        let _ = s.notify_resource_list_changed().await;
    }
    if uris.is_empty() {
        return;
    }
    let svc = service.clone();
    let Ok(now) = tokio::task::spawn_blocking(move || {
        uris.into_iter()
            .map(|u| {
                let f = fingerprint(&svc, &u);
                (u, f)
            })
            .collect::<HashMap<String, u64>>()
    })
    .await
    else {
        return;
    };
    // Which uri goes to whom, updating what each last saw.
    let (to_peer, to_sinks) = {
        let mut l = lock(live);
        let mut to_peer = Vec::new();
        for (u, old) in l.subscribed.iter_mut() {
            if let Some(f) = now.get(u).filter(|f| *f != old) {
                *old = *f;
                to_peer.push(u.clone());
            }
        }
        let mut to_sinks = Vec::new();
        for x in l.listeners.iter_mut() {
            for (u, old) in x.uris.iter_mut() {
                let Some(f) = now.get(u) else { continue };
                match old {
                    Some(o) if o != f => to_sinks.push((x.sink.clone(), u.clone())),
                    _ => {}
                }
                *old = Some(*f);
            }
        }
        (to_peer, to_sinks)
    };
    if let Some(p) = &peer {
        for u in to_peer {
            let _ = p
                .notify_resource_updated(ResourceUpdatedNotificationParam::new(u))
                .await;
        }
    }
    for (s, u) in to_sinks {
        let _ = s.notify_resource_updated(u).await;
    }
}
