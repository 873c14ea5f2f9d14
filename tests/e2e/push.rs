//! Web Push end to end: the real binary pushes to a push service on 127.0.0.1 that does what
//! a browser's push service and the browser do — checks the VAPID token (RFC 8292) and
//! decrypts the payload with the subscription's keys (RFC 8291). The decryption and the
//! signature check here are written from the RFCs over the primitives (p256, HKDF,
//! AES-128-GCM), not with the crate the server encrypts with.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use aes_gcm::aead::{Aead, KeyInit};
use axum::extract::{Path as UrlPath, State};
use axum::http::{HeaderMap, StatusCode};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hkdf::Hkdf;
use p256::ecdsa::signature::Verifier as _;
use serde_json::{Value, json};
use sha2_11::Sha256;
use wright_llm::testing::{FakeProvider, Turn};

use crate::model_loop::{Server, TOKEN, Wire};

/// One request the push service received.
#[derive(Clone, Debug)]
struct Received {
    path: String,
    headers: HeaderMap,
    body: Vec<u8>,
}

type Inbox = Arc<Mutex<Vec<Received>>>;

/// A push service: `/gone/...` answers 410 (the browser unsubscribed); anything else 201.
async fn push_service() -> (String, Inbox) {
    let inbox: Inbox = Arc::default();
    let app = axum::Router::new()
        .route(
            "/{kind}/{id}",
            axum::routing::post(
                |State(inbox): State<Inbox>,
                 UrlPath((kind, id)): UrlPath<(String, String)>,
                 headers: HeaderMap,
                 body: axum::body::Bytes| async move {
                    inbox.lock().unwrap().push(Received {
                        path: format!("/{kind}/{id}"),
                        headers,
                        body: body.to_vec(),
                    });
                    if kind == "gone" { StatusCode::GONE } else { StatusCode::CREATED }
                },
            ),
        )
        .with_state(Arc::clone(&inbox));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.ok() });
    (url, inbox)
}

/// A browser's side of a subscription: its ECDH key pair and auth secret.
struct Browser {
    secret: p256::SecretKey,
    auth: [u8; 16],
}

impl Browser {
    fn new(seed: u8) -> Self {
        let secret = p256::SecretKey::random(&mut p256::elliptic_curve::rand_core::OsRng);
        Self { secret, auth: [seed; 16] }
    }

    fn public(&self) -> Vec<u8> {
        self.secret.public_key().to_sec1_bytes().to_vec()
    }

    /// RFC 8291 §3.4 and RFC 8188 §2: the aes128gcm header (salt, record size, key id = the
    /// server's ephemeral public key), then one record.
    fn decrypt(&self, body: &[u8]) -> Vec<u8> {
        let salt = &body[..16];
        let record_size = u32::from_be_bytes(body[16..20].try_into().unwrap()) as usize;
        let id_length = body[20] as usize;
        let server_public_bytes = &body[21..21 + id_length];
        let ciphertext = &body[21 + id_length..];
        assert_eq!(id_length, 65, "the key id is the server's uncompressed P-256 key");
        assert!(ciphertext.len() <= record_size, "one record");
        let server_public = p256::PublicKey::from_sec1_bytes(server_public_bytes).unwrap();
        let shared = p256::ecdh::diffie_hellman(self.secret.to_nonzero_scalar(), server_public.as_affine());
        // ikm = HKDF(auth, ecdh, "WebPush: info" 0x00 ua_public as_public, 32)
        let mut info = b"WebPush: info\0".to_vec();
        info.extend_from_slice(&self.public());
        info.extend_from_slice(server_public_bytes);
        let mut ikm = [0u8; 32];
        Hkdf::<Sha256>::new(Some(&self.auth), shared.raw_secret_bytes()).expand(&info, &mut ikm).unwrap();
        let content = Hkdf::<Sha256>::new(Some(salt), &ikm);
        let mut key = [0u8; 16];
        content.expand(b"Content-Encoding: aes128gcm\0", &mut key).unwrap();
        let mut nonce = [0u8; 12];
        content.expand(b"Content-Encoding: nonce\0", &mut nonce).unwrap();
        let cipher = aes_gcm::Aes128Gcm::new_from_slice(&key).unwrap();
        let mut plain = cipher.decrypt(&aes_gcm::Nonce::from(nonce), ciphertext).expect("the payload decrypts");
        // The last record ends with the delimiter 0x02 and any zero padding.
        while plain.last() == Some(&0) {
            plain.pop();
        }
        assert_eq!(plain.pop(), Some(2), "the last record's delimiter");
        plain
    }
}

/// RFC 8292: `vapid t=<JWT>, k=<key>`; an ES256 token for the push service's origin, signed
/// by the key the canvas subscribed with, expiring within 24 hours, with a contact.
fn check_vapid(headers: &HeaderMap, server_key: &str, origin: &str) {
    let authorization = headers["authorization"].to_str().unwrap();
    let rest = authorization.strip_prefix("vapid ").expect("the vapid scheme");
    let (mut token, mut key) = ("", "");
    for part in rest.split(',') {
        let (name, value) = part.trim().split_once('=').unwrap();
        match name {
            "t" => token = value,
            "k" => key = value,
            other => panic!("unknown vapid parameter {other}"),
        }
    }
    assert_eq!(key, server_key, "k is the key the browser subscribed with");
    let parts: Vec<&str> = token.split('.').collect();
    assert_eq!(parts.len(), 3, "{token}");
    let header: Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[0]).unwrap()).unwrap();
    assert_eq!(header["alg"], "ES256");
    let claims: Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[1]).unwrap()).unwrap();
    assert_eq!(claims["aud"], origin, "the audience is the push service's origin, port included");
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let expires = claims["exp"].as_u64().unwrap();
    assert!(expires > now && expires <= now + 24 * 3600, "{claims}");
    assert!(claims["sub"].as_str().unwrap().starts_with("mailto:"), "{claims}");
    let verifying = p256::ecdsa::VerifyingKey::from_sec1_bytes(&URL_SAFE_NO_PAD.decode(key).unwrap()).unwrap();
    let signature = p256::ecdsa::Signature::from_slice(&URL_SAFE_NO_PAD.decode(parts[2]).unwrap()).unwrap();
    verifying.verify(format!("{}.{}", parts[0], parts[1]).as_bytes(), &signature).expect("the token's signature");
}

async fn wait_for_pushes(inbox: &Inbox, count: usize) -> Vec<Received> {
    let started = Instant::now();
    loop {
        let received = inbox.lock().unwrap().clone();
        if received.len() >= count {
            return received;
        }
        assert!(started.elapsed() < Duration::from_secs(20), "{} of {count} pushes arrived", received.len());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn a_notification_and_a_waiting_question_reach_a_subscribed_browser_encrypted_and_signed() {
    let (service, inbox) = push_service().await;
    let script = vec![
        Turn::tool_call("notify", json!({"title": "Train", "text": "Your train leaves at 9:40."})),
        Turn::text("Told you."),
        Turn::tool_call("ask_user", json!({"question": "Window or aisle?"})),
    ];
    let fake = FakeProvider::start(script).await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("config.toml"), "[push]\nallow_http_endpoints = true\nmax_subscriptions = 2\n")
        .unwrap();
    let server = Server::start(dir.path(), &fake, Wire::Openai);

    // The key is made on the first start and kept.
    let key = server.get("/api/push/key").await["public_key"].as_str().unwrap().to_owned();
    assert_eq!(URL_SAFE_NO_PAD.decode(&key).unwrap().len(), 65);
    assert!(dir.path().join("vapid_key").is_file());

    let browser = Browser::new(7);
    let subscribe = |endpoint: String, browser: &Browser| {
        json!({
            "endpoint": endpoint,
            "keys": {"p256dh": URL_SAFE_NO_PAD.encode(browser.public()), "auth": URL_SAFE_NO_PAD.encode(browser.auth)},
            "label": "Chromium on a phone",
        })
    };
    let (status, device) = server.post("/api/push/devices", subscribe(format!("{service}/push/1"), &browser)).await;
    assert_eq!(status, 201, "{device}");
    assert_eq!(
        (device["label"].as_str(), device["service"].as_str()),
        (Some("Chromium on a phone"), Some("127.0.0.1"))
    );
    // A browser that has since unsubscribed: its push service answers 410 and it is removed.
    let gone = Browser::new(9);
    let (status, gone_device) = server.post("/api/push/devices", subscribe(format!("{service}/gone/2"), &gone)).await;
    assert_eq!(status, 201, "{gone_device}");
    // Past [push] max_subscriptions, and keys that are not keys, are refused.
    let (status, body) =
        server.post("/api/push/devices", subscribe(format!("{service}/push/3"), &Browser::new(1))).await;
    assert_eq!((status, body["error"]["code"].as_str()), (422, Some("limit")), "{body}");
    let mut bad = subscribe(format!("{service}/push/4"), &browser);
    bad["keys"]["auth"] = json!("c2hvcnQ");
    let (status, body) = server.post("/api/push/devices", bad).await;
    assert_eq!((status, body["error"]["code"].as_str()), (400, Some("invalid_subscription")), "{body}");

    let id = server.conversation().await;
    let detail = server.say(&id, "tell me about the train").await;
    let result =
        detail["events"].as_array().unwrap().iter().find(|event| event["kind"] == "tool_result").unwrap().clone();
    assert_eq!(result["success"], true, "{result}");

    let received = wait_for_pushes(&inbox, 2).await;
    let to_browser: Vec<&Received> = received.iter().filter(|push| push.path == "/push/1").collect();
    assert_eq!(to_browser.len(), 1, "{received:?}");
    let push = to_browser[0];
    assert_eq!(push.headers["content-encoding"], "aes128gcm");
    assert!(push.headers["ttl"].to_str().unwrap().parse::<u64>().unwrap() > 0);
    check_vapid(&push.headers, &key, &service);
    let message: Value = serde_json::from_slice(&browser.decrypt(&push.body)).unwrap();
    assert_eq!(message["title"], "Train");
    assert_eq!(message["body"], "Your train leaves at 9:40.");
    assert_eq!(message["url"], format!("/agents/default/c/{id}"), "the notification opens its conversation");
    // The payload is not readable without the browser's keys.
    assert!(!String::from_utf8_lossy(&push.body).contains("train"));

    // The gone browser was removed; the list shows the one left, with its last push.
    let started = Instant::now();
    let devices = loop {
        let devices = server.get("/api/push/devices").await;
        if devices.as_array().unwrap().len() == 1 {
            break devices;
        }
        assert!(started.elapsed() < Duration::from_secs(10), "{devices}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(devices[0]["id"], device["id"]);
    assert!(devices[0]["last_sent_at"].is_string() && devices[0]["last_error"].is_null(), "{devices}");

    // A question the run parks on is pushed too, and opens the conversation it waits in.
    let (status, _) = server.post(&format!("/api/conversations/{id}/messages"), json!({"text": "book a seat"})).await;
    assert_eq!(status, 202);
    let received = wait_for_pushes(&inbox, 3).await;
    let push = received.last().unwrap();
    assert_eq!(push.path, "/push/1");
    check_vapid(&push.headers, &key, &service);
    let message: Value = serde_json::from_slice(&browser.decrypt(&push.body)).unwrap();
    assert_eq!(message["url"], format!("/agents/default/c/{id}"));
    assert!(message["title"].as_str().unwrap().contains("waiting"), "{message}");

    // The person removes the device: nothing more is pushed to it.
    let removed = server
        .client
        .delete(format!("{}/api/push/devices/{}", server.url, device["id"]))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(removed.status(), 200);
    assert_eq!(server.get("/api/push/devices").await, json!([]));
}
