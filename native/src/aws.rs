//! The AWS settings Go hands over: region, endpoint, addressing style,
//! request limits and credentials, which pkg/awsconfig resolves once per process through the
//! standard chain. Nothing here reads AWS_* variables: Go is the single
//! source, so the engine and pkg/blob talk to the same S3 as the same
//! principal. S3 stores take region and endpoint when built and sign every
//! request with the credentials in the slot at that moment, so credentials
//! Go renews ahead of expiry reach stores already open.

use std::fmt::Write as _;
use std::sync::{Arc, LazyLock, RwLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use serde::Deserialize;
use slatedb::object_store::aws::AwsCredential;
use slatedb::object_store::CredentialProvider;
use tokio::sync::Notify;

use crate::{fail, Res, RL_ERR_INVALID};

/// The start of every message about missing credentials, which maps them to
/// RL_ERR_NO_CREDENTIALS wherever they surface (pkg/awsconfig's sentinel says
/// the same).
pub const NO_CREDENTIALS: &str = "no AWS credentials";

/// How long a request waits for renewed credentials once the slot's have
/// expired (Go renews ahead of expiry; this covers a late renewal, such as a
/// Lambda sandbox thawed after its credentials ran out).
const EXPIRED_WAIT: Duration = Duration::from_secs(10);

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Handed {
    region: String,
    #[serde(default)]
    endpoint: String,
    #[serde(default)]
    path_style: bool,
    access_key_id: String,
    secret_access_key: String,
    #[serde(default)]
    session_token: String,
    /// 0: the credentials do not expire.
    #[serde(default)]
    expires_unix_ms: u64,
    connect_timeout_ms: u64,
    first_byte_timeout_ms: u64,
    stall_timeout_ms: u64,
    attempts: usize,
}

/// What bounds every S3 request (pkg/awsconfig.Limits, ROCKLAKE_S3_*).
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub connect: Duration,
    pub first_byte: Duration,
    pub stall: Duration,
    /// Tries of one request (object_store's retries are one fewer).
    pub attempts: usize,
}

/// What S3 stores are built with.
pub struct Aws {
    pub region: String,
    /// Empty for AWS S3.
    pub endpoint: String,
    pub path_style: bool,
    pub limits: Limits,
    credential: Arc<AwsCredential>,
    expires: Option<SystemTime>,
}

static SLOT: RwLock<Option<Arc<Aws>>> = RwLock::new(None);
static CHANGED: LazyLock<Notify> = LazyLock::new(Notify::new);

/// Replaces the process's AWS settings with those in `json`, checked whole:
/// bad settings change nothing.
pub fn set(json: &str) -> Res<()> {
    let h: Handed = serde_json::from_str(json)
        .map_err(|e| fail(RL_ERR_INVALID, format!("AWS settings: {e}")))?;
    let bad = |why: &str| fail(RL_ERR_INVALID, format!("AWS settings: {why}"));
    if h.region.is_empty() {
        return Err(bad("region is empty"));
    }
    if h.access_key_id.is_empty() || h.secret_access_key.is_empty() {
        return Err(bad("access key id and secret access key are both required"));
    }
    if !h.endpoint.is_empty() {
        let u = url::Url::parse(&h.endpoint)
            .map_err(|e| bad(&format!("endpoint {:?}: {e}", h.endpoint)))?;
        if !matches!(u.scheme(), "http" | "https") {
            return Err(bad(&format!(
                "endpoint {:?}: scheme must be http or https",
                h.endpoint
            )));
        }
    }
    if h.connect_timeout_ms == 0
        || h.first_byte_timeout_ms == 0
        || h.stall_timeout_ms == 0
        || h.attempts == 0
    {
        return Err(bad("request limits must all be positive"));
    }
    let aws = Aws {
        region: h.region,
        endpoint: h.endpoint,
        path_style: h.path_style,
        limits: Limits {
            connect: Duration::from_millis(h.connect_timeout_ms),
            first_byte: Duration::from_millis(h.first_byte_timeout_ms),
            stall: Duration::from_millis(h.stall_timeout_ms),
            attempts: h.attempts,
        },
        credential: Arc::new(AwsCredential {
            key_id: h.access_key_id,
            secret_key: h.secret_access_key,
            token: (!h.session_token.is_empty()).then_some(h.session_token),
        }),
        expires: (h.expires_unix_ms > 0)
            .then(|| UNIX_EPOCH + Duration::from_millis(h.expires_unix_ms)),
    };
    *SLOT.write().unwrap_or_else(|p| p.into_inner()) = Some(Arc::new(aws));
    CHANGED.notify_waiters();
    Ok(())
}

/// The settings handed last, if any.
pub fn current() -> Option<Arc<Aws>> {
    SLOT.read().unwrap_or_else(|p| p.into_inner()).clone()
}

#[cfg(test)]
fn clear() {
    *SLOT.write().unwrap_or_else(|p| p.into_inner()) = None;
}

/// Signs S3 requests with the slot's credentials.
#[derive(Debug)]
pub struct SlotCredentials {
    expired_wait: Duration,
}

impl SlotCredentials {
    pub fn new() -> Self {
        SlotCredentials {
            expired_wait: EXPIRED_WAIT,
        }
    }
}

fn error(msg: String) -> slatedb::object_store::Error {
    slatedb::object_store::Error::Generic {
        store: "S3",
        source: msg.into(),
    }
}

#[async_trait]
impl CredentialProvider for SlotCredentials {
    type Credential = AwsCredential;

    async fn get_credential(&self) -> slatedb::object_store::Result<Arc<AwsCredential>> {
        let deadline = tokio::time::Instant::now() + self.expired_wait;
        loop {
            // Created before the check, so a renewal in between still wakes it.
            let renewed = CHANGED.notified();
            let Some(aws) = current() else {
                return Err(error(format!(
                    "{NO_CREDENTIALS}: none were handed to the engine"
                )));
            };
            let expired_for = aws
                .expires
                .and_then(|t| SystemTime::now().duration_since(t).ok());
            let Some(expired_for) = expired_for else {
                return Ok(aws.credential.clone());
            };
            if tokio::time::timeout_at(deadline, renewed).await.is_err() {
                let mut msg = String::from(NO_CREDENTIALS);
                let _ = write!(
                    msg,
                    ": the engine's credentials expired {:.0?} ago and were not renewed within {:?}",
                    expired_for, self.expired_wait
                );
                return Err(error(msg));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now_ms(offset_ms: i64) -> u64 {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_millis() as i64;
        (now + offset_ms) as u64
    }

    const LIMITS: &str = r#""connect_timeout_ms":5000,"first_byte_timeout_ms":10000,"stall_timeout_ms":10000,"attempts":3"#;

    fn settings(key: &str, expires_unix_ms: u64) -> String {
        format!(
            r#"{{"region":"us-east-1","endpoint":"http://127.0.0.1:1","path_style":true,"access_key_id":"{key}","secret_access_key":"s","expires_unix_ms":{expires_unix_ms},{LIMITS}}}"#
        )
    }

    /// One test, as the slot is process-wide: the steps must not interleave
    /// with each other.
    #[test]
    fn slot_is_checked_set_renewed_and_expires() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let provider = SlotCredentials {
            expired_wait: Duration::from_millis(300),
        };
        let msg = |r: slatedb::object_store::Result<Arc<AwsCredential>>| {
            r.map(|c| c.key_id.clone()).map_err(|e| e.to_string())
        };

        clear();
        let r = rt.block_on(provider.get_credential());
        assert!(msg(r).unwrap_err().contains(NO_CREDENTIALS));
        let e = crate::store::resolve("s3://b/db", &crate::store::Options::default())
            .err()
            .expect("no settings: refused");
        assert_eq!(e.code, crate::RL_ERR_NO_CREDENTIALS);
        assert!(e.msg.contains(NO_CREDENTIALS), "{}", e.msg);

        for bad in [
            "{}",
            "nope",
            r#"{"region":"","access_key_id":"a","secret_access_key":"s"}"#,
            r#"{"region":"r","access_key_id":"","secret_access_key":"s"}"#,
            r#"{"region":"r","access_key_id":"a","secret_access_key":"s","endpoint":"ftp://x"}"#,
            r#"{"region":"r","access_key_id":"a","secret_access_key":"s","extra":1}"#,
            // Limits are required, and none may be zero (unbounded).
            r#"{"region":"r","access_key_id":"a","secret_access_key":"s"}"#,
            settings("k", 0)
                .replace(r#""attempts":3"#, r#""attempts":0"#)
                .as_str(),
            settings("k", 0)
                .replace(r#""stall_timeout_ms":10000"#, r#""stall_timeout_ms":0"#)
                .as_str(),
        ] {
            assert!(set(bad).is_err(), "{bad} should be refused");
        }
        assert!(current().is_none(), "refused settings must change nothing");

        set(&settings("k1", 0)).unwrap_or_else(|e| panic!("{}", e.msg));
        assert_eq!(msg(rt.block_on(provider.get_credential())).unwrap(), "k1");
        assert!(crate::store::resolve("s3://b/db", &crate::store::Options::default()).is_ok());

        // Expired credentials: a request waits for renewed ones...
        set(&settings("k2", now_ms(-1000))).unwrap_or_else(|e| panic!("{}", e.msg));
        let got = rt.block_on(async {
            let waiting = tokio::spawn(async move {
                SlotCredentials {
                    expired_wait: Duration::from_secs(5),
                }
                .get_credential()
                .await
            });
            tokio::time::sleep(Duration::from_millis(100)).await;
            set(&settings("k3", now_ms(60_000))).unwrap_or_else(|e| panic!("{}", e.msg));
            waiting.await.unwrap()
        });
        assert_eq!(msg(got).unwrap(), "k3");
        // ...and fails, naming the cause, when none come.
        set(&settings("k4", now_ms(-1000))).unwrap_or_else(|e| panic!("{}", e.msg));
        let e = msg(rt.block_on(provider.get_credential())).unwrap_err();
        assert!(e.contains(NO_CREDENTIALS) && e.contains("expired"), "{e}");
        clear();
    }
}
