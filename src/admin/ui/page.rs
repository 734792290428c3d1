//! The dashboard's HTML. maud escapes every interpolated value (bucket
//! names, rule IDs, endpoints, error text); the only unescaped markup is
//! the SVG plotters draws from numbers.

use maud::{html, Markup, PreEscaped, DOCTYPE};

use godwit_common::replication::RuleStats;
use godwit_common::types::{DatanodeStatus, MetaStatus};
use godwit_common::verify::{JobState, VerifyJob};

/// This region as the admin process sees it.
pub struct LocalHealth {
    /// The meta group's status, or why it could not be read.
    pub meta: Result<MetaStatus, String>,
    pub datanodes: Result<Vec<DatanodeStatus>, String>,
}

/// A remote region and whether its endpoint accepts connections.
pub struct RemoteHealth {
    pub name: String,
    pub endpoint: String,
    pub region: String,
    /// Ok: connected in this many ms; Err: why not.
    pub reachable: Result<u64, String>,
}

/// One status row (bucket, rule, destination, lane) and what the page
/// adds to it.
pub struct RowView {
    pub stats: RuleStats,
    pub chart_svg: String,
    /// From the SLA report's total over [`super::REPORT_PERIOD`].
    pub within_threshold: Option<f64>,
    pub failures_by_cause: Vec<(String, u64)>,
}

pub struct BucketView {
    pub bucket: String,
    pub rows: Vec<RowView>,
    /// Why the SLA report could not be read, if it could not.
    pub report_error: Option<String>,
    /// The bucket's FAILED tasks (up to [`super::FAILED_SHOWN`]) with their last error.
    pub failed: Result<Vec<FailedTask>, String>,
}

/// A task waiting in the failed set for `retry failed`.
pub struct FailedTask {
    pub key: String,
    pub destination: String,
    pub attempts: u32,
    pub last_error: String,
}

pub struct Overview {
    pub local: LocalHealth,
    pub remotes: Result<Vec<RemoteHealth>, String>,
    pub buckets: Result<Vec<BucketView>, String>,
    /// The verify jobs meta keeps (`godwit admin replication jobs`),
    /// oldest first.
    pub jobs: Result<Vec<VerifyJob>, String>,
    /// When the figures were read, `YYYY-MM-DD HH:MM:SS UTC`.
    pub read_at: String,
}

fn layout(title: &str, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) }
                link rel="stylesheet" href="/ui/assets/ui.css";
            }
            body { (body) }
        }
    }
}

/// The login form; `problem` is said above it (wrong key, plain HTTP...).
pub fn login(problem: Option<&str>) -> Markup {
    layout(
        "Godwit admin: log in",
        html! {
            main.login {
                h1 { "Godwit admin" }
                p.hint { "Log in with the root access key. The session lasts an hour." }
                @if let Some(p) = problem {
                    p.problem role="alert" { (p) }
                }
                form method="post" action="/ui/login" {
                    label { "Access key ID" input type="text" name="access_key_id" autocomplete="username" required; }
                    label { "Secret access key" input type="password" name="secret_access_key" autocomplete="current-password" required; }
                    button type="submit" id="login" { "Log in" }
                }
            }
        },
    )
}

/// The whole page: header, then the panel the script refreshes.
pub fn dashboard(overview: &Overview, csrf: &str, notice: Option<&str>) -> Markup {
    layout(
        "Godwit replication",
        html! {
            header {
                h1 { "Godwit replication" }
                span.refreshed { "figures of " span #read-at { (overview.read_at) } " · refreshed every 5 s" }
                form.logout method="post" action="/ui/logout" {
                    input type="hidden" name="csrf" value=(csrf);
                    button type="submit" id="logout" { "Log out" }
                }
            }
            @if let Some(n) = notice {
                p.notice #notice role="status" { (n) }
            }
            div #panel { (panel(overview, csrf)) }
            script src="/ui/assets/ui.js" {}
        },
    )
}

fn percent(share: Option<f64>) -> String {
    share.map_or("–".into(), |s| format!("{:.2}%", s * 100.0))
}

fn error_line(what: &str, e: &str) -> Markup {
    html! { p.problem { (what) ": " (e) } }
}

/// The part of the page the script fetches again (`GET /ui/panel`).
pub fn panel(o: &Overview, csrf: &str) -> Markup {
    html! {
        section #regions {
            h2 { "Regions" }
            table {
                thead { tr { th { "region" } th { "endpoint" } th { "health" } } }
                tbody {
                    tr.region data-name="local" {
                        td { "this region" }
                        td { "–" }
                        td { (local_health(&o.local)) }
                    }
                    @match &o.remotes {
                        Ok(remotes) => @for r in remotes {
                            tr.region data-name=(r.name) {
                                td { (r.name) " (" (r.region) ")" }
                                td { code { (r.endpoint) } }
                                @match &r.reachable {
                                    Ok(ms) => td.ok data-reachable="true" { "reachable (" (ms) " ms)" },
                                    Err(e) => td.bad data-reachable="false" { "unreachable: " (e) },
                                }
                            }
                        },
                        Err(e) => tr { td colspan="3" { (error_line("remotes", e)) } },
                    }
                }
            }
        }
        section #replication {
            h2 { "Replication rules" }
            @match &o.buckets {
                Err(e) => (error_line("replication status", e)),
                Ok(buckets) if buckets.is_empty() => p { "No bucket has replication rules." },
                Ok(buckets) => @for b in buckets { (bucket(b, csrf)) },
            }
        }
        section #verify {
            h2 { "Verify jobs" }
            @match &o.jobs {
                Err(e) => (error_line("verify jobs", e)),
                Ok(jobs) if jobs.is_empty() => p.jobs-none { "No verify job has run." },
                Ok(jobs) => (verify_jobs(jobs)),
            }
        }
    }
}

/// Jobs shown: every running one and the most recent others.
const FINISHED_JOBS_SHOWN: usize = 5;

/// The verify jobs, running first, then the latest finished ones: per job
/// its rules done of all (a bar), keys compared, differing, requeued.
fn verify_jobs(jobs: &[VerifyJob]) -> Markup {
    let running = jobs.iter().filter(|j| j.state == JobState::Running);
    let finished = jobs
        .iter()
        .rev()
        .filter(|j| j.state != JobState::Running)
        .take(FINISHED_JOBS_SHOWN);
    html! {
        table.jobs {
            thead { tr {
                th { "job" } th { "bucket" } th { "level" } th { "state" } th { "rules done" }
                th { "compared" } th { "differing" } th { "requeued" }
            } }
            tbody {
                @for j in running.chain(finished) {
                    @let counts = j.counts();
                    @let done = j.rules.iter().filter(|r| r.done).count();
                    tr.verify-job data-id=(j.id) {
                        td { code { (j.id) } }
                        td.bucket { code { (j.spec.bucket) } }
                        td.level { (j.spec.level) @if j.spec.repair { " (repair)" } }
                        td.state { (j.state.as_str()) @if let Some(e) = &j.error { ": " (e) } }
                        td.rules-done {
                            progress max=(j.rules.len().max(1)) value=(done) {}
                            " " (done) " of " (j.rules.len())
                        }
                        td.compared { (counts.total()) }
                        td.differing { (counts.differing()) }
                        td.requeued { (j.requeued()) }
                    }
                }
            }
        }
    }
}

fn local_health(l: &LocalHealth) -> Markup {
    html! {
        @match &l.meta {
            Ok(m) => span.ok { "meta " (m.state) ", leader " (m.current_leader.map_or("none".into(), |n| n.to_string())) ", " (m.members.len()) " member(s)" },
            Err(e) => span.bad { "meta unreachable: " (e) },
        }
        " · "
        @match &l.datanodes {
            Ok(d) => {
                @let up = d.iter().filter(|n| n.up).count();
                span class=(if up == d.len() { "ok" } else { "bad" }) { (up) "/" (d.len()) " datanode(s) up" }
            },
            Err(e) => span.bad { "datanodes: " (e) },
        }
    }
}

fn bucket(b: &BucketView, csrf: &str) -> Markup {
    html! {
        article.bucket data-bucket=(b.bucket) {
            div.bucket-head {
                h3 { "Bucket " code { (b.bucket) } }
                form.retry method="post" action="/ui/retry-failed" {
                    input type="hidden" name="csrf" value=(csrf);
                    input type="hidden" name="bucket" value=(b.bucket);
                    button type="submit" class="retry" { "Retry failed" }
                }
            }
            @if let Some(e) = &b.report_error { (error_line("SLA report", e)) }
            table.rules {
                thead { tr {
                    th { "rule" } th { "destination" } th { "lane" }
                    th { "backlog ops" } th { "backlog bytes" } th { "oldest age" }
                    th { "completed" } th { "failed" } th { "within RTC threshold (24 h)" }
                    th { "failures by cause (24 h)" } th { "lag, last hour" }
                } }
                tbody {
                    @for r in &b.rows {
                        @let s = &r.stats;
                        tr.rule data-rule=(s.rule_id) data-lane=(s.lane) {
                            td { code { (s.rule_id) } }
                            td { code { (s.destination) } }
                            td.lane { (s.lane) }
                            td.num.pending-ops { (s.pending_operations) }
                            td.num.pending-bytes { (s.pending_bytes) }
                            td.num.oldest-age { (format!("{:.1} s", s.oldest_pending_age_seconds)) }
                            td.num.completed { (s.completed_operations_total) }
                            td.num.failed { (s.failed_operations_total) }
                            td.num.within-threshold { (percent(r.within_threshold)) }
                            td.causes {
                                @for (cause, n) in &r.failures_by_cause { div { (cause) ": " (n) } }
                            }
                            td.chart { (PreEscaped(&r.chart_svg)) }
                        }
                    }
                }
            }
            h4 { "Failed tasks" }
            @match &b.failed {
                Err(e) => (error_line("failed tasks", e)),
                Ok(tasks) if tasks.is_empty() => p.none.failed-none { "None waiting for a retry." },
                Ok(tasks) => table.failed-tasks {
                    thead { tr { th { "key" } th { "destination" } th { "attempts" } th { "last error" } } }
                    tbody { @for t in tasks { tr.failed-task {
                        td { code { (t.key) } } td { code { (t.destination) } }
                        td.num { (t.attempts) } td.last-error { (t.last_error) }
                    } } }
                },
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_error_text_are_escaped() {
        let evil = "<script>alert(1)</script>";
        let b = BucketView {
            bucket: evil.into(),
            rows: vec![],
            report_error: Some(evil.into()),
            failed: Ok(vec![FailedTask {
                key: evil.into(),
                destination: evil.into(),
                attempts: 1,
                last_error: evil.into(),
            }]),
        };
        let html = bucket(&b, "\"><script>").into_string();
        assert!(!html.contains("<script>"), "{html}");
        assert!(
            html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
            "{html}"
        );
        assert!(login(Some(evil)).into_string().matches("<script").count() == 0);
    }
}
