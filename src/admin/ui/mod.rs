//! The replication dashboard on the admin listener (`/ui`).
//!
//! A login form exchanges the root key for a session cookie
//! (`session.rs`); the cookie authorizes only the `/ui` pages and their
//! two actions (retry failed, log out), each of which also carries the
//! session's CSRF token. The admin API (`/admin/v1`) never looks at the
//! cookie: it stays SigV4-signed by the root key. Login refuses plain HTTP
//! unless the admin listener is bound to a loopback address, so the root
//! secret and the cookie never cross a network in clear.
//!
//! The page reads the same meta calls as `/admin/v1/replication/status`,
//! `/report` and `/retry-failed`, and is rendered on the server (`page.rs`,
//! charts in `lag.rs`); its stylesheet and script are compiled into the
//! binary.

mod lag;
mod page;
mod session;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::{Form, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::{Extension, Router};
use godwit_common::replication::RuleStats;
use godwit_common::sla::{parse_period, SlaReport};
use godwit_common::MetaError;
use godwit_gateway::authz::ClientConn;
use serde::Deserialize;

use super::server::{AdminState, MetaHandles};
use lag::LagHistory;
use page::{BucketView, FailedTask, LocalHealth, Overview, RemoteHealth, RowView};
use session::{same_secret, Sessions, COOKIE_NAME, SESSION_LIFETIME};

/// The period of the SLA figures the page shows.
pub const REPORT_PERIOD: &str = "24h";
/// Failed tasks listed per bucket (the retry requeues all of them).
pub const FAILED_SHOWN: u32 = 20;
/// How long the page waits for a remote's endpoint to accept a connection.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

const CSS: &str = include_str!("assets/ui.css");
const JS: &str = include_str!("assets/ui.js");

/// The dashboard of one admin listener.
pub struct Dashboard {
    admin: Arc<AdminState>,
    sessions: Arc<Sessions>,
    lag: Arc<LagHistory>,
    /// Takes a lag sample at once (after a login).
    wake: Arc<tokio::sync::Notify>,
    /// Whether the listener's own address is loopback: plain-HTTP logins
    /// are accepted only then.
    loopback: bool,
}

impl Dashboard {
    /// The `/ui` routes for the admin listener bound at `local`, and the
    /// lag sampler, which runs until `shutdown` (sampling only while a
    /// session is live).
    pub fn start(
        admin: Arc<AdminState>,
        local: SocketAddr,
        shutdown: tokio_util::sync::CancellationToken,
    ) -> (Router, tokio::task::JoinHandle<anyhow::Result<()>>) {
        let dash = Arc::new(Dashboard {
            admin,
            sessions: Arc::new(Sessions::default()),
            lag: Arc::new(LagHistory::default()),
            wake: Arc::new(tokio::sync::Notify::new()),
            loopback: local.ip().is_loopback(),
        });
        let sampler = {
            let d = dash.clone();
            let sessions = dash.sessions.clone();
            tokio::spawn(async move {
                lag::sample_loop(
                    d.lag.clone(),
                    move || sessions.any_live(),
                    || {
                        let d = d.clone();
                        async move {
                            let meta = d.admin.meta_handles()?;
                            meta.objects.replication_stats(None).await.ok()
                        }
                    },
                    d.wake.clone(),
                    shutdown,
                )
                .await;
                Ok(())
            })
        };
        let router = Router::new()
            .route("/ui", get(show_page))
            .route("/ui/", get(|| async { Redirect::to("/ui") }))
            .route("/ui/panel", get(show_panel))
            .route("/ui/login", get(show_login).post(log_in))
            .route("/ui/logout", post(log_out))
            .route("/ui/retry-failed", post(retry_failed))
            .route("/ui/assets/ui.css", get(|| asset(CSS, "text/css")))
            .route("/ui/assets/ui.js", get(|| asset(JS, "text/javascript")))
            .with_state(dash);
        (router, sampler)
    }

    /// The cookie's session token and its live session, if the request
    /// carries one.
    fn session(&self, headers: &HeaderMap) -> Option<(String, session::Session)> {
        let token = cookie(headers, COOKIE_NAME)?;
        let s = self.sessions.get(&token)?;
        Some((token, s))
    }
}

/// The value of cookie `name` in the request's `Cookie` headers.
fn cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.to_string())
}

async fn asset(body: &'static str, content_type: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, content_type),
            (header::CACHE_CONTROL, "no-cache"),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        ],
        body,
    )
        .into_response()
}

/// An HTML response with the headers every dashboard page carries: no
/// caching, no framing (the retry button cannot be clickjacked), scripts
/// and styles from this listener only.
fn html(status: StatusCode, markup: maud::Markup) -> Response {
    let mut resp = (status, markup.into_string()).into_response();
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; style-src 'self'; script-src 'self'; connect-src 'self'; \
             img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
        ),
    );
    resp
}

/// Why a login is refused before the key is looked at, if it is.
fn transport_problem(dash: &Dashboard, conn: Option<&ClientConn>) -> Option<&'static str> {
    match conn {
        Some(c) if c.secure || dash.loopback => None,
        _ => Some(
            "Login needs HTTPS: this admin listener serves plain HTTP on a \
             non-loopback address. Enable TLS, or bind the admin listener to \
             127.0.0.1 and use an SSH tunnel.",
        ),
    }
}

async fn show_login(
    State(dash): State<Arc<Dashboard>>,
    conn: Option<Extension<ClientConn>>,
    headers: HeaderMap,
) -> Response {
    if dash.session(&headers).is_some() {
        return Redirect::to("/ui").into_response();
    }
    let problem = transport_problem(&dash, conn.as_deref());
    html(StatusCode::OK, page::login(problem))
}

#[derive(Deserialize)]
struct LoginForm {
    access_key_id: String,
    secret_access_key: String,
}

/// The same answer for an unknown key, a key that is not root and a wrong
/// secret: the page does not tell which part was wrong.
const WRONG_CREDENTIALS: &str = "Wrong access key ID or secret, or not the root key.";

async fn log_in(
    State(dash): State<Arc<Dashboard>>,
    conn: Option<Extension<ClientConn>>,
    Form(form): Form<LoginForm>,
) -> Response {
    let conn = conn.map(|Extension(c)| c);
    if let Some(problem) = transport_problem(&dash, conn.as_ref()) {
        return html(StatusCode::FORBIDDEN, page::login(Some(problem)));
    }
    let peer = conn.map(|c| c.peer.ip());
    if peer.is_some_and(|ip| dash.sessions.throttled(ip)) {
        return html(
            StatusCode::TOO_MANY_REQUESTS,
            page::login(Some("Too many failed logins: wait a minute.")),
        );
    }
    let Some(meta) = dash.admin.meta_handles() else {
        return html(
            StatusCode::SERVICE_UNAVAILABLE,
            page::login(Some("The admin listener is not ready yet.")),
        );
    };
    let stored = match meta.objects.get_access_key(&form.access_key_id).await {
        Ok(k) => Some(k),
        Err(MetaError::NoSuchAccessKey) => None,
        Err(e) => {
            tracing::warn!(error = %e, "dashboard login: key lookup failed");
            return html(
                StatusCode::SERVICE_UNAVAILABLE,
                page::login(Some("Meta is unavailable; try again.")),
            );
        }
    };
    // Compared even for an unknown key, so the time taken says little
    // about which part was wrong.
    let (secret, is_root) = stored
        .as_ref()
        .map_or(("", false), |k| (k.secret_access_key.as_str(), k.is_root));
    let secret_ok = same_secret(secret, &form.secret_access_key);
    if !(secret_ok && is_root && stored.is_some()) {
        if let Some(ip) = peer {
            dash.sessions.note_failure(ip);
        }
        return html(
            StatusCode::UNAUTHORIZED,
            page::login(Some(WRONG_CREDENTIALS)),
        );
    }
    let token = dash.sessions.open();
    dash.wake.notify_one();
    let secure = if conn.is_some_and(|c| c.secure) {
        "; Secure"
    } else {
        ""
    };
    let set_cookie = format!(
        "{COOKIE_NAME}={token}; Path=/ui; Max-Age={}; HttpOnly; SameSite=Strict{secure}",
        SESSION_LIFETIME.as_secs()
    );
    let mut resp = Redirect::to("/ui").into_response();
    resp.headers_mut().insert(
        header::SET_COOKIE,
        HeaderValue::from_str(&set_cookie).expect("cookie is ASCII"),
    );
    resp
}

#[derive(Deserialize)]
struct ActionForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    bucket: String,
}

/// Why an action (retry failed, log out) is refused.
enum Refused {
    /// No cookie, or one of no live session: 401 and the login form.
    NoSession,
    /// The form lacks the session's CSRF token: 403, nothing done.
    Csrf,
}

impl IntoResponse for Refused {
    fn into_response(self) -> Response {
        match self {
            Refused::NoSession => html(
                StatusCode::UNAUTHORIZED,
                page::login(Some("Your session ended; log in again.")),
            ),
            Refused::Csrf => (
                StatusCode::FORBIDDEN,
                "the form's CSRF token is missing or wrong: reload the dashboard",
            )
                .into_response(),
        }
    }
}

/// The session token of an action request whose form carries the
/// session's CSRF token.
fn action_session(
    dash: &Dashboard,
    headers: &HeaderMap,
    form: &ActionForm,
) -> Result<String, Refused> {
    let (token, session) = dash.session(headers).ok_or(Refused::NoSession)?;
    if !same_secret(&session.csrf, &form.csrf) {
        return Err(Refused::Csrf);
    }
    Ok(token)
}

async fn log_out(
    State(dash): State<Arc<Dashboard>>,
    headers: HeaderMap,
    Form(form): Form<ActionForm>,
) -> Response {
    let token = match action_session(&dash, &headers, &form) {
        Ok(t) => t,
        Err(refusal) => return refusal.into_response(),
    };
    dash.sessions.close(&token);
    let mut resp = Redirect::to("/ui/login").into_response();
    resp.headers_mut().insert(
        header::SET_COOKIE,
        HeaderValue::from_str(&format!(
            "{COOKIE_NAME}=; Path=/ui; Max-Age=0; HttpOnly; SameSite=Strict"
        ))
        .expect("cookie is ASCII"),
    );
    resp
}

/// The page's "Retry failed": the meta call behind
/// `POST /admin/v1/replication/retry-failed`.
async fn retry_failed(
    State(dash): State<Arc<Dashboard>>,
    headers: HeaderMap,
    Form(form): Form<ActionForm>,
) -> Response {
    let token = match action_session(&dash, &headers, &form) {
        Ok(t) => t,
        Err(refusal) => return refusal.into_response(),
    };
    let notice = match dash.admin.meta_handles() {
        None => "The admin listener is not ready yet.".to_string(),
        Some(meta) => match meta.admin.retry_failed(&form.bucket).await {
            Ok(n) => format!("{n} failed task(s) of {} requeued", form.bucket),
            Err(e) => format!("Retry of {} failed: {e}", form.bucket),
        },
    };
    dash.sessions.set_notice(&token, notice);
    Redirect::to("/ui").into_response()
}

async fn show_page(State(dash): State<Arc<Dashboard>>, headers: HeaderMap) -> Response {
    let Some((token, session)) = dash.session(&headers) else {
        return Redirect::to("/ui/login").into_response();
    };
    let overview = overview(&dash).await;
    let notice = dash.sessions.take_notice(&token);
    html(
        StatusCode::OK,
        page::dashboard(&overview, &session.csrf, notice.as_deref()),
    )
}

/// The panel alone, for the page's auto-refresh; 401 without a session
/// (the script then goes to the login form).
async fn show_panel(State(dash): State<Arc<Dashboard>>, headers: HeaderMap) -> Response {
    let Some((_, session)) = dash.session(&headers) else {
        return StatusCode::UNAUTHORIZED.into_response();
    };
    let overview = overview(&dash).await;
    let mut resp = html(StatusCode::OK, page::panel(&overview, &session.csrf));
    if let Ok(v) = HeaderValue::from_str(&overview.read_at) {
        resp.headers_mut().insert("x-godwit-read-at", v);
    }
    resp
}

/// Everything the page shows, read now.
async fn overview(dash: &Dashboard) -> Overview {
    let now_ms = godwit_common::clock::now_ms();
    let read_at = time::OffsetDateTime::from_unix_timestamp(now_ms / 1000)
        .ok()
        .and_then(|t| {
            t.format(time::macros::format_description!(
                "[year]-[month]-[day] [hour]:[minute]:[second] UTC"
            ))
            .ok()
        })
        .unwrap_or_default();
    let Some(meta) = dash.admin.meta_handles() else {
        let not_ready = || "the admin listener is not ready yet".to_string();
        return Overview {
            local: LocalHealth {
                meta: Err(not_ready()),
                datanodes: Err(not_ready()),
            },
            remotes: Err(not_ready()),
            buckets: Err(not_ready()),
            jobs: Err(not_ready()),
            read_at,
        };
    };
    let (meta_status, datanodes, remotes, buckets, jobs) = tokio::join!(
        meta.admin.status(),
        meta.admin.datanode_status(),
        remotes(&meta),
        buckets(dash, &meta, now_ms),
        meta.admin.list_verify_jobs(),
    );
    Overview {
        local: LocalHealth {
            meta: meta_status.map_err(|e| e.to_string()),
            datanodes: datanodes.map_err(|e| e.to_string()),
        },
        remotes,
        buckets,
        jobs: jobs.map_err(|e| e.to_string()),
        read_at,
    }
}

/// The remotes, each probed with a TCP connection to its endpoint (a
/// remote with a private CA is still reachable without trusting it here).
async fn remotes(meta: &MetaHandles) -> Result<Vec<RemoteHealth>, String> {
    let list = meta
        .objects
        .list_remotes()
        .await
        .map_err(|e| e.to_string())?;
    let probes = list.into_iter().map(|r| async move {
        let reachable = probe(&r.endpoint).await;
        RemoteHealth {
            name: r.name,
            endpoint: r.endpoint,
            region: r.region,
            reachable,
        }
    });
    Ok(futures::future::join_all(probes).await)
}

async fn probe(endpoint: &str) -> Result<u64, String> {
    let url = reqwest::Url::parse(endpoint).map_err(|e| format!("bad endpoint: {e}"))?;
    let host = url.host_str().ok_or("endpoint without a host")?.to_string();
    let port = url
        .port_or_known_default()
        .ok_or("endpoint without a port")?;
    let started = Instant::now();
    match tokio::time::timeout(
        PROBE_TIMEOUT,
        tokio::net::TcpStream::connect((host.trim_matches(['[', ']']), port)),
    )
    .await
    {
        Ok(Ok(_)) => Ok(started.elapsed().as_millis() as u64),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err(format!("no answer in {} s", PROBE_TIMEOUT.as_secs())),
    }
}

/// The status rows grouped by bucket, each bucket with its SLA report's
/// figures and its failed tasks.
async fn buckets(
    dash: &Dashboard,
    meta: &MetaHandles,
    now_ms: i64,
) -> Result<Vec<BucketView>, String> {
    let rows = meta
        .objects
        .replication_stats(None)
        .await
        .map_err(|e| e.to_string())?;
    let mut by_bucket: BTreeMap<String, Vec<RuleStats>> = BTreeMap::new();
    for r in rows {
        by_bucket.entry(r.bucket.clone()).or_default().push(r);
    }
    let period = parse_period(REPORT_PERIOD).expect("a valid period");
    let views = by_bucket.into_iter().map(|(bucket, rows)| async move {
        let (report, failed) = tokio::join!(
            meta.admin.replication_report(&bucket, None, period),
            meta.admin.failed_tasks(&bucket, FAILED_SHOWN),
        );
        let (report, report_error) = match report {
            Ok(r) => (Some(r), None),
            Err(e) => (None, Some(e.to_string())),
        };
        let rows = rows
            .into_iter()
            .map(|stats| row_view(dash, stats, report.as_ref(), now_ms))
            .collect();
        let failed = failed
            .map(|tasks| {
                tasks
                    .into_iter()
                    .map(|t| FailedTask {
                        destination: format!("{}/{}", t.remote, t.destination_bucket),
                        key: t.key,
                        attempts: t.attempts,
                        last_error: t.last_error.unwrap_or_default(),
                    })
                    .collect()
            })
            .map_err(|e| e.to_string());
        BucketView {
            bucket,
            rows,
            report_error,
            failed,
        }
    });
    Ok(futures::future::join_all(views).await)
}

fn row_view(
    dash: &Dashboard,
    stats: RuleStats,
    report: Option<&SlaReport>,
    now_ms: i64,
) -> RowView {
    let rule = report.and_then(|r| r.rules.iter().find(|r| r.rule_id == stats.rule_id));
    let mut samples = dash.lag.samples(&lag::row_key(&stats), now_ms);
    // The chart ends with the figure the table shows.
    samples.push(lag::Sample {
        at_ms: now_ms,
        lag_seconds: stats.oldest_pending_age_seconds,
    });
    RowView {
        chart_svg: lag::chart_svg(&samples, now_ms),
        within_threshold: rule.and_then(|r| r.total.within_threshold),
        failures_by_cause: rule
            .map(|r| {
                r.total
                    .failures
                    .iter()
                    .map(|(c, n)| (c.clone(), *n))
                    .collect()
            })
            .unwrap_or_default(),
        stats,
    }
}
