//! Work-done progress (`$/progress`): the tokens and the begin, report and end messages.

use crate::session::Backend;
use std::sync::atomic::Ordering;
use std::time::Duration;
use tower_lsp_server::ls_types::*;

impl Backend {
    pub(crate) async fn progress_begin(
        &self,
        token: &ProgressToken,
        title: &str,
        cancellable: bool,
    ) {
        self.client
            .send_notification::<notification::Progress>(ProgressParams {
                token: token.clone(),
                value: ProgressParamsValue::WorkDone(WorkDoneProgress::Begin(
                    WorkDoneProgressBegin {
                        title: title.to_string(),
                        cancellable: Some(cancellable),
                        message: None,
                        percentage: None,
                    },
                )),
            })
            .await;
    }

    pub(crate) async fn progress_report(&self, token: &ProgressToken, message: String) {
        self.client
            .send_notification::<notification::Progress>(ProgressParams {
                token: token.clone(),
                value: ProgressParamsValue::WorkDone(WorkDoneProgress::Report(
                    WorkDoneProgressReport {
                        message: Some(message),
                        ..Default::default()
                    },
                )),
            })
            .await;
    }

    pub(crate) async fn progress_end(&self, token: &ProgressToken, message: String) {
        self.client
            .send_notification::<notification::Progress>(ProgressParams {
                token: token.clone(),
                value: ProgressParamsValue::WorkDone(WorkDoneProgress::End(WorkDoneProgressEnd {
                    message: Some(message),
                })),
            })
            .await;
    }

    /// A progress token: the client's, else a new one if the client supports it.
    pub(crate) async fn token(
        &self,
        given: Option<ProgressToken>,
        prefix: &str,
    ) -> Option<ProgressToken> {
        if given.is_some() {
            return given;
        }
        if !self.lock().caps.work_done {
            return None;
        }
        let n = self.shared.counter.fetch_add(1, Ordering::Relaxed);
        let t = NumberOrString::String(format!("kiwi-{prefix}-{n}"));
        match tokio::time::timeout(
            Duration::from_secs(5),
            self.client.create_work_done_progress(t.clone()),
        )
        .await
        {
            Ok(Ok(())) => Some(t),
            _ => None,
        }
    }
}

/// A progress token as a map key.
pub(crate) fn token_key(t: &ProgressToken) -> String {
    match t {
        NumberOrString::Number(n) => format!("n:{n}"),
        NumberOrString::String(s) => format!("s:{s}"),
    }
}
