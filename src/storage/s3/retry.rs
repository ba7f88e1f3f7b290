//! Retrying what the client gives up on early.

use std::time::{Duration, Instant};

use crate::error::Result;

/// Runs `attempt` until it succeeds, fails for good (a missing object, refused
/// credentials, bad bytes), or `budget` has passed since the first try, with backoff.
/// The client retries what it knows (5xx, throttling, connection errors); this catches
/// what it gives up on early (a connection closed before its answer, a body cut short
/// where it cannot resume), so every transient failure gets the same time.
pub(crate) async fn retrying<T, F, Fut>(budget: Duration, mut attempt: F) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T>>,
{
    let start = Instant::now();
    let mut pause = Duration::from_millis(50);
    loop {
        match attempt().await {
            Err(e) if e.is_transient() && start.elapsed() < budget => {
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_secs(2));
            }
            result => return result,
        }
    }
}
