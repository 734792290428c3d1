//! Dashboard sessions: what a successful login with the root key buys.
//!
//! A session is a random 256-bit token (the cookie) kept server-side with
//! an expiry and its own CSRF token; only the SHA-256 of the cookie is
//! stored, so a lookup compares digests, never the secret itself. Sessions
//! live in the admin process's memory: a restart logs everyone out.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rand::rngs::OsRng;
use rand::RngCore;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// How long a session lasts after login (no sliding renewal).
pub const SESSION_LIFETIME: Duration = Duration::from_secs(3600);
/// The cookie's name; its Path is `/ui`, so browsers never send it to the
/// admin API (which would refuse it anyway).
pub const COOKIE_NAME: &str = "godwit_ui";
/// Failed logins one client address may make per window before it is
/// refused with 429 until the window ends.
pub const MAX_FAILED_LOGINS: u32 = 5;
pub const FAILED_LOGIN_WINDOW: Duration = Duration::from_secs(60);

/// A logged-in browser.
#[derive(Clone)]
pub struct Session {
    expires: Instant,
    /// Carried by every action form and checked before the action runs.
    pub csrf: String,
    /// Said once on the next page (e.g. "3 failed task(s) requeued").
    pub notice: Option<String>,
}

#[derive(Default)]
pub struct Sessions {
    by_digest: Mutex<HashMap<[u8; 32], Session>>,
    failures: Mutex<HashMap<IpAddr, (Instant, u32)>>,
}

/// 32 bytes from the operating system's CSPRNG, hex-encoded.
fn random_token() -> String {
    let mut bytes = [0u8; 32];
    OsRng.fill_bytes(&mut bytes);
    hex::encode(bytes)
}

fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

/// Constant-time string equality (the time does not tell how many leading
/// bytes matched).
pub fn same_secret(a: &str, b: &str) -> bool {
    a.as_bytes().ct_eq(b.as_bytes()).into()
}

impl Sessions {
    /// Opens a session; returns its cookie value.
    pub fn open(&self) -> String {
        let token = random_token();
        let session = Session {
            expires: Instant::now() + SESSION_LIFETIME,
            csrf: random_token(),
            notice: None,
        };
        let mut map = self.by_digest.lock().expect("sessions lock");
        let now = Instant::now();
        map.retain(|_, s| s.expires > now);
        map.insert(digest(&token), session);
        token
    }

    /// The live session of a cookie value, if any.
    pub fn get(&self, token: &str) -> Option<Session> {
        let mut map = self.by_digest.lock().expect("sessions lock");
        let key = digest(token);
        match map.get(&key) {
            Some(s) if s.expires > Instant::now() => Some(s.clone()),
            Some(_) => {
                map.remove(&key);
                None
            }
            None => None,
        }
    }

    /// The session's notice, removed so it shows once.
    pub fn take_notice(&self, token: &str) -> Option<String> {
        let mut map = self.by_digest.lock().expect("sessions lock");
        map.get_mut(&digest(token)).and_then(|s| s.notice.take())
    }

    pub fn set_notice(&self, token: &str, notice: String) {
        if let Some(s) = self
            .by_digest
            .lock()
            .expect("sessions lock")
            .get_mut(&digest(token))
        {
            s.notice = Some(notice);
        }
    }

    pub fn close(&self, token: &str) {
        self.by_digest
            .lock()
            .expect("sessions lock")
            .remove(&digest(token));
    }

    /// Whether any session is live (the lag sampler runs only then).
    pub fn any_live(&self) -> bool {
        let now = Instant::now();
        self.by_digest
            .lock()
            .expect("sessions lock")
            .values()
            .any(|s| s.expires > now)
    }

    /// Whether `ip` has used up its failed logins for the current window.
    pub fn throttled(&self, ip: IpAddr) -> bool {
        let map = self.failures.lock().expect("sessions lock");
        matches!(map.get(&ip), Some((start, n))
            if start.elapsed() < FAILED_LOGIN_WINDOW && *n >= MAX_FAILED_LOGINS)
    }

    pub fn note_failure(&self, ip: IpAddr) {
        let mut map = self.failures.lock().expect("sessions lock");
        map.retain(|_, (start, _)| start.elapsed() < FAILED_LOGIN_WINDOW);
        map.entry(ip).or_insert((Instant::now(), 0)).1 += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_is_found_by_its_token_only_until_closed() {
        let s = Sessions::default();
        let token = s.open();
        assert_eq!(token.len(), 64);
        let session = s.get(&token).expect("live session");
        assert_eq!(session.csrf.len(), 64);
        assert_ne!(session.csrf, token);
        assert!(s.get(&random_token()).is_none());
        s.close(&token);
        assert!(s.get(&token).is_none());
        assert!(!s.any_live());
    }

    #[test]
    fn failed_logins_are_throttled_per_address() {
        let s = Sessions::default();
        let ip: IpAddr = "192.0.2.1".parse().unwrap();
        for _ in 0..MAX_FAILED_LOGINS {
            assert!(!s.throttled(ip));
            s.note_failure(ip);
        }
        assert!(s.throttled(ip));
        assert!(!s.throttled("192.0.2.2".parse().unwrap()));
    }
}
