//! Web Push: the person's browsers are told when something waits for them — a notification
//! (the agent's `notify`, a scheduled task's answer) or a question or approval a run parked
//! on — even with the canvas closed, on a phone too.
//!
//! - **VAPID (RFC 8292).** The server's P-256 key is made on first start and kept in
//!   `<data_dir>/vapid_key` (the private scalar, base64url, mode 0600); browsers subscribe
//!   with its public half. Each request carries `Authorization: vapid t=<ES256 JWT>, k=<key>`
//!   whose audience is the push service's origin (port included when not the default).
//! - **Encryption (RFC 8291, `aes128gcm`).** By `web-push-native` with the subscription's
//!   keys; the push service sees only ciphertext.
//! - **Which path the request takes.** A push goes straight to the push service, not through
//!   the egress: the egress judges requests the *agent* causes, at addresses untrusted content
//!   chose. A push endpoint comes from the person's own browser through the authenticated API,
//!   the body is ours and encrypted, and nothing of the answer but its status is read. The
//!   client follows no redirect and uses no proxy from the environment; endpoints must be
//!   `https` (`[push] allow_http_endpoints` is for a local push service in tests).
//! - A push service's 404 or 410 means the subscription is gone: it is removed. Other
//!   failures are kept on the subscription for the list of devices; nothing is retried
//!   (a push is a nudge — the notification itself stays in the canvas).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::{Deserialize, Serialize};
use web_push_native::p256;
use web_push_native::p256::ecdsa::signature::Signer as _;
use wright_store::{PushSubscription, Store};

use crate::domain::hub::{Hub, Update, WAITING_TOPIC};

/// `[push]` in config.toml.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PushConfig {
    /// Off: no keys are made, the canvas offers no push, nothing is sent.
    pub enabled: bool,
    /// Who runs this server, for push services that need to reach them (RFC 8292's `sub`):
    /// a `mailto:` or `https:` address.
    pub contact: String,
    /// Devices that may be subscribed at once.
    pub max_subscriptions: usize,
    /// How long a push service keeps a push for a device that is offline, seconds.
    pub ttl_secs: u64,
    /// Longest wait for a push service's answer, seconds.
    pub request_timeout_secs: u64,
    /// The longest notification text sent (it is cut there; the canvas has it whole).
    pub max_body_chars: usize,
    /// Accept `http:` endpoints: only for a push service on this machine (tests).
    pub allow_http_endpoints: bool,
}

impl Default for PushConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            contact: "mailto:wright@localhost".into(),
            max_subscriptions: 20,
            ttl_secs: 24 * 60 * 60,
            request_timeout_secs: 10,
            max_body_chars: 500,
            allow_http_endpoints: false,
        }
    }
}

/// What the service worker receives: the notification to show and the address it opens.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct PushMessage {
    pub title: String,
    pub body: String,
    /// The canvas's address to open (a conversation, or the agent's page).
    pub url: String,
    /// One notification per tag is shown: a newer push about the same thing replaces it.
    pub tag: String,
}

#[derive(Debug, thiserror::Error)]
pub enum PushError {
    #[error("the VAPID key in {path}: {reason}")]
    Key { path: String, reason: String },
    #[error("the subscription is not usable: {0}")]
    Subscription(String),
    #[error("the push service could not be reached: {0}")]
    Network(String),
    /// The push service answered with an error status.
    #[error("the push service answered {status}")]
    Refused { status: u16, gone: bool },
}

/// The server's VAPID key and the client that sends pushes.
pub struct Pusher {
    key: p256::ecdsa::SigningKey,
    public_key: String,
    http: reqwest::Client,
    config: PushConfig,
}

impl std::fmt::Debug for Pusher {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.debug_struct("Pusher").field("public_key", &self.public_key).finish_non_exhaustive()
    }
}

const KEY_FILE: &str = "vapid_key";

impl Pusher {
    /// Reads the VAPID key from the data directory, making and storing one on first start.
    pub fn load_or_create(data_dir: &Path, config: PushConfig) -> Result<Self, PushError> {
        let path = data_dir.join(KEY_FILE);
        let key_error = |reason: String| PushError::Key { path: path.display().to_string(), reason };
        let key = match std::fs::read_to_string(&path) {
            Ok(text) => {
                let bytes = URL_SAFE_NO_PAD.decode(text.trim()).map_err(|error| key_error(error.to_string()))?;
                p256::ecdsa::SigningKey::from_slice(&bytes).map_err(|error| key_error(error.to_string()))?
            }
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                let key = p256::ecdsa::SigningKey::random(&mut p256::elliptic_curve::rand_core::OsRng);
                write_private(&path, &URL_SAFE_NO_PAD.encode(key.to_bytes()))
                    .map_err(|error| key_error(error.to_string()))?;
                key
            }
            Err(error) => return Err(key_error(error.to_string())),
        };
        let public_key = URL_SAFE_NO_PAD.encode(key.verifying_key().to_encoded_point(false).as_bytes());
        rustls::crypto::ring::default_provider().install_default().ok();
        let http = reqwest::Client::builder()
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(Duration::from_secs(config.request_timeout_secs))
            .timeout(Duration::from_secs(config.request_timeout_secs))
            .build()
            .map_err(|error| PushError::Network(error.to_string()))?;
        Ok(Self { key, public_key, http, config })
    }

    /// The VAPID public key (an uncompressed P-256 point, base64url) browsers subscribe with.
    pub fn public_key(&self) -> &str {
        &self.public_key
    }

    pub fn config(&self) -> &PushConfig {
        &self.config
    }

    /// Whether a subscription's endpoint and keys can be used, before it is stored.
    pub fn check_subscription(&self, endpoint: &str, p256dh: &str, auth: &str) -> Result<(), PushError> {
        let url =
            reqwest::Url::parse(endpoint).map_err(|error| PushError::Subscription(format!("endpoint: {error}")))?;
        let scheme_ok = url.scheme() == "https" || (self.config.allow_http_endpoints && url.scheme() == "http");
        if !scheme_ok || url.host().is_none() || endpoint.len() > 2048 {
            return Err(PushError::Subscription("the endpoint must be an https address of a push service".into()));
        }
        browser_keys(p256dh, auth).map(|_| ())
    }

    /// Sends `message` to one browser.
    pub async fn send(&self, subscription: &PushSubscription, message: &PushMessage) -> Result<(), PushError> {
        let (public, auth) = browser_keys(&subscription.p256dh, &subscription.auth)?;
        let mut message = message.clone();
        if message.body.chars().count() > self.config.max_body_chars {
            message.body = message.body.chars().take(self.config.max_body_chars).collect::<String>() + "…";
        }
        let plain = serde_json::to_vec(&message).map_err(|error| PushError::Subscription(error.to_string()))?;
        let body = web_push_native::encrypt(plain, &public, &auth)
            .map_err(|error| PushError::Subscription(format!("encryption: {error}")))?;
        let url = reqwest::Url::parse(&subscription.endpoint)
            .map_err(|error| PushError::Subscription(format!("endpoint: {error}")))?;
        let authorization = self.vapid(&url)?;
        let response = self
            .http
            .post(url)
            .header("TTL", self.config.ttl_secs.to_string())
            .header("Urgency", "high")
            .header(reqwest::header::CONTENT_ENCODING, "aes128gcm")
            .header(reqwest::header::CONTENT_TYPE, "application/octet-stream")
            .header(reqwest::header::AUTHORIZATION, authorization)
            .body(body)
            .send()
            .await
            .map_err(|error| PushError::Network(error.without_url().to_string()))?;
        let status = response.status();
        if status.is_success() {
            Ok(())
        } else {
            Err(PushError::Refused { status: status.as_u16(), gone: matches!(status.as_u16(), 404 | 410) })
        }
    }

    /// `vapid t=<JWT>, k=<public key>` for a push service at `endpoint` (RFC 8292): an ES256
    /// token for the endpoint's origin, valid for 12 hours (the most push services accept is 24).
    fn vapid(&self, endpoint: &reqwest::Url) -> Result<String, PushError> {
        let expires = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_err(|error| PushError::Subscription(error.to_string()))?
            .as_secs()
            + 12 * 60 * 60;
        let header = URL_SAFE_NO_PAD.encode(br#"{"typ":"JWT","alg":"ES256"}"#);
        let claims = serde_json::json!({
            "aud": endpoint.origin().ascii_serialization(),
            "exp": expires,
            "sub": self.config.contact,
        });
        let claims = URL_SAFE_NO_PAD.encode(claims.to_string());
        let signed = format!("{header}.{claims}");
        let signature: p256::ecdsa::Signature = self.key.sign(signed.as_bytes());
        Ok(format!("vapid t={signed}.{}, k={}", URL_SAFE_NO_PAD.encode(signature.to_bytes()), self.public_key))
    }

    /// Sends `message` to every subscribed browser, removing those the push service says are
    /// gone and noting other failures on the subscription.
    pub async fn send_to_all(&self, store: &Store, message: &PushMessage) {
        let subscriptions = match store.push_subscriptions().await {
            Ok(subscriptions) => subscriptions,
            Err(error) => {
                tracing::warn!(%error, "cannot read push subscriptions");
                return;
            }
        };
        for subscription in subscriptions {
            let outcome = self.send(&subscription, message).await;
            let recorded = match &outcome {
                Ok(()) => store.record_push(subscription.id, None).await,
                Err(PushError::Refused { gone: true, .. }) => store.delete_push_subscription(subscription.id).await,
                Err(error) => {
                    tracing::info!(%error, subscription = subscription.id, "a push was not delivered");
                    store.record_push(subscription.id, Some(&error.to_string())).await
                }
            };
            if let Err(error) = recorded {
                tracing::warn!(%error, "cannot record a push");
            }
        }
    }
}

/// The browser's public key and auth secret, checked.
fn browser_keys(p256dh: &str, auth: &str) -> Result<(p256::PublicKey, web_push_native::Auth), PushError> {
    let public = URL_SAFE_NO_PAD
        .decode(p256dh.trim_end_matches('='))
        .ok()
        .and_then(|bytes| p256::PublicKey::from_sec1_bytes(&bytes).ok())
        .ok_or_else(|| PushError::Subscription("keys.p256dh is not a P-256 public key in base64url".into()))?;
    let auth: [u8; 16] = URL_SAFE_NO_PAD
        .decode(auth.trim_end_matches('='))
        .ok()
        .and_then(|bytes| bytes.try_into().ok())
        .ok_or_else(|| PushError::Subscription("keys.auth is not 16 bytes in base64url".into()))?;
    Ok((public, web_push_native::Auth::from(auth)))
}

/// Writes the private key readable by this user only.
fn write_private(path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write as _;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(path)?;
    file.write_all(text.as_bytes())?;
    file.sync_all()
}

/// The canvas's address of a conversation (`frontend/src/router.ts`).
pub fn conversation_url(agent: &str, conversation: &str) -> String {
    format!("/agents/{}/c/{}", encode(agent), encode(conversation))
}

fn encode(segment: &str) -> String {
    segment
        .bytes()
        .map(|byte| match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (byte as char).to_string(),
            other => format!("%{other:02X}"),
        })
        .collect()
}

/// A notification, as a push.
pub fn notification_message(notification: &wright_store::Notification) -> PushMessage {
    PushMessage {
        title: notification.title.clone(),
        body: notification.text.clone(),
        url: match &notification.conversation_id {
            Some(conversation) => conversation_url(&notification.agent_id, conversation),
            None => format!("/agents/{}", encode(&notification.agent_id)),
        },
        tag: format!("notification-{}", notification.id),
    }
}

/// Sends a push for every run that parks on a question or an approval, until shutdown.
pub fn spawn_waiting(store: Store, hub: Arc<Hub>, pusher: Arc<Pusher>, shutdown: tokio_util::sync::CancellationToken) {
    tokio::spawn(async move {
        let mut waiting = hub.subscribe(WAITING_TOPIC);
        loop {
            let update = tokio::select! {
                update = waiting.recv() => update,
                () = shutdown.cancelled() => return,
            };
            let (agent_id, conversation_id) = match update {
                Ok(Update::Waiting { agent_id, conversation_id }) => (agent_id, conversation_id),
                Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
            };
            let title =
                store.conversation(&conversation_id).await.map(|conversation| conversation.title).unwrap_or_default();
            let message = PushMessage {
                title: format!("{agent_id} is waiting for you"),
                body: if title.is_empty() {
                    "A question or an approval waits for your answer.".to_owned()
                } else {
                    format!("A question or an approval waits for your answer in “{title}”.")
                },
                url: conversation_url(&agent_id, &conversation_id),
                tag: format!("waiting-{conversation_id}"),
            };
            let (store, pusher) = (store.clone(), Arc::clone(&pusher));
            tokio::spawn(async move { pusher.send_to_all(&store, &message).await });
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_is_made_once_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let first = Pusher::load_or_create(dir.path(), PushConfig::default()).unwrap();
        let again = Pusher::load_or_create(dir.path(), PushConfig::default()).unwrap();
        assert_eq!(first.public_key(), again.public_key());
        assert_eq!(URL_SAFE_NO_PAD.decode(first.public_key()).unwrap().len(), 65);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(dir.path().join(KEY_FILE)).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }

    #[test]
    fn only_https_endpoints_and_well_formed_keys_are_accepted() {
        let dir = tempfile::tempdir().unwrap();
        let pusher = Pusher::load_or_create(dir.path(), PushConfig::default()).unwrap();
        let browser = p256::SecretKey::random(&mut p256::elliptic_curve::rand_core::OsRng);
        let p256dh = URL_SAFE_NO_PAD.encode(browser.public_key().to_sec1_bytes());
        let auth = URL_SAFE_NO_PAD.encode([7u8; 16]);
        assert!(pusher.check_subscription("https://push.example/abc", &p256dh, &auth).is_ok());
        assert!(pusher.check_subscription("http://127.0.0.1:9/abc", &p256dh, &auth).is_err());
        assert!(pusher.check_subscription("https://push.example/abc", "AAAA", &auth).is_err());
        assert!(pusher.check_subscription("https://push.example/abc", &p256dh, "AAAA").is_err());
        let local =
            Pusher::load_or_create(dir.path(), PushConfig { allow_http_endpoints: true, ..PushConfig::default() })
                .unwrap();
        assert!(local.check_subscription("http://127.0.0.1:9/abc", &p256dh, &auth).is_ok());
    }

    #[test]
    fn a_conversation_url_is_the_canvas_route_with_escaped_segments() {
        assert_eq!(conversation_url("default", "0193-ab"), "/agents/default/c/0193-ab");
        assert_eq!(conversation_url("a b", "x/y"), "/agents/a%20b/c/x%2Fy");
    }
}
