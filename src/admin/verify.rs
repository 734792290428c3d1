//! `godwit admin replication verify BUCKET --level N` and `godwit admin
//! replication jobs`: start a verify job (`godwit_common::verify`) on the
//! admin API, follow it with a progress bar (on a terminal, without
//! `--json`/`--csv`) until it finishes, and print its report as tables,
//! JSON or CSV.

use std::io::IsTerminal;
use std::time::Duration;

use comfy_table::Table;
use godwit_common::verify::{JobState, Outcome, VerifyJob};
use indicatif::{ProgressBar, ProgressStyle};

use super::cli::{percent_encode, AdminClient};

/// How often a waiting CLI asks for the job's progress.
const POLL_INTERVAL: Duration = Duration::from_millis(200);

/// How the report is printed.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Output {
    Table,
    Json,
    Csv,
}

/// What `verify` was asked.
pub(crate) struct VerifyArgs<'a> {
    pub bucket: &'a str,
    pub rule: Option<&'a str>,
    pub prefix: Option<&'a str>,
    pub level: u8,
    pub repair: bool,
    pub wait: bool,
}

pub(crate) async fn run(
    client: &AdminClient,
    out: Output,
    a: VerifyArgs<'_>,
) -> anyhow::Result<()> {
    let mut q = format!(
        "/admin/v1/replication/verify?bucket={}&level={}",
        percent_encode(a.bucket),
        a.level
    );
    if let Some(rule) = a.rule {
        q.push_str(&format!("&rule={}", percent_encode(rule)));
    }
    if let Some(prefix) = a.prefix {
        q.push_str(&format!("&prefix={}", percent_encode(prefix)));
    }
    if a.repair {
        q.push_str("&repair=1");
    }
    let mut job: VerifyJob = client.send(http::Method::POST, &q).await?.json().await?;
    if a.wait {
        job = wait(
            client,
            job,
            out == Output::Table && std::io::stdout().is_terminal(),
        )
        .await?;
    }
    print_job(&job, out)?;
    match job.state {
        JobState::Failed => anyhow::bail!(
            "verify job {} failed: {}",
            job.id,
            job.error.as_deref().unwrap_or("")
        ),
        _ => Ok(()),
    }
}

/// Polls the job until it is no longer running.
async fn wait(client: &AdminClient, mut job: VerifyJob, bar: bool) -> anyhow::Result<VerifyJob> {
    let path = format!("/admin/v1/replication/jobs/{}", percent_encode(&job.id));
    let progress = bar.then(|| {
        let pb = ProgressBar::new_spinner();
        pb.set_style(
            ProgressStyle::with_template(
                "{spinner} {pos} keys compared ({per_sec}, {elapsed}) {msg}",
            )
            .expect("a valid template"),
        );
        pb.enable_steady_tick(Duration::from_millis(100));
        pb
    });
    while job.state == JobState::Running {
        tokio::time::sleep(POLL_INTERVAL).await;
        job = client.send(http::Method::GET, &path).await?.json().await?;
        if let Some(pb) = &progress {
            let c = job.counts();
            pb.set_position(c.total());
            pb.set_message(format!("{} differing", c.differing()));
        }
    }
    if let Some(pb) = progress {
        pb.finish_and_clear();
    }
    Ok(job)
}

pub(crate) fn print_job(job: &VerifyJob, out: Output) -> anyhow::Result<()> {
    match out {
        Output::Json => println!("{}", serde_json::to_string_pretty(job)?),
        Output::Csv => print!("{}", csv(job)),
        Output::Table => print!("{}", render(job)),
    }
    Ok(())
}

/// The report for people: a heading, the counts per rule, the differing
/// keys listed.
pub(crate) fn render(job: &VerifyJob) -> String {
    let spec = &job.spec;
    let mut out = format!(
        "verify job {} of {} (level {}{}{}): {}\n",
        job.id,
        spec.bucket,
        spec.level,
        if spec.prefix.is_empty() {
            String::new()
        } else {
            format!(", prefix {}", spec.prefix)
        },
        if spec.repair { ", repair" } else { "" },
        job.state.as_str()
    );
    if let Some(e) = &job.error {
        out.push_str(&format!("error: {e}\n"));
    }
    let mut t = Table::new();
    let mut header = vec!["rule", "destination"];
    header.extend(Outcome::ALL.iter().map(|o| o.as_str()));
    header.extend(["requeued", "done"]);
    t.set_header(header);
    for r in &job.rules {
        let mut row = vec![r.rule_id.clone(), r.destination.clone()];
        row.extend(Outcome::ALL.iter().map(|o| r.counts.get(*o).to_string()));
        row.push(r.requeued.to_string());
        row.push(if r.done { "yes" } else { "no" }.to_string());
        t.add_row(row);
    }
    out.push_str(&format!("{t}\n"));
    if !job.differences.is_empty() {
        let mut t = Table::new();
        t.set_header(vec!["rule", "key", "outcome", "why"]);
        for d in &job.differences {
            t.add_row(vec![
                d.rule_id.as_str(),
                d.key.as_str(),
                d.outcome.as_str(),
                d.reason.as_str(),
            ]);
        }
        let total = job.counts().differing();
        out.push_str(&format!(
            "differing keys ({} of {total} listed)\n{t}\n",
            job.differences.len()
        ));
    }
    out
}

/// The report as CSV (RFC 4180, by the csv crate): a `count` row per rule
/// and outcome, then a `key` row per listed differing key.
pub(crate) fn csv(job: &VerifyJob) -> String {
    let mut w = csv::WriterBuilder::new()
        .terminator(csv::Terminator::CRLF)
        .from_writer(Vec::new());
    let mut rows: Vec<[String; 6]> =
        vec![["kind", "rule", "outcome", "count", "key", "reason"].map(String::from)];
    for r in &job.rules {
        for o in Outcome::ALL {
            rows.push([
                "count".into(),
                r.rule_id.clone(),
                o.as_str().into(),
                r.counts.get(o).to_string(),
                String::new(),
                String::new(),
            ]);
        }
    }
    for d in &job.differences {
        rows.push([
            "key".into(),
            d.rule_id.clone(),
            d.outcome.as_str().into(),
            String::new(),
            d.key.clone(),
            d.reason.clone(),
        ]);
    }
    for row in &rows {
        w.write_record(row).expect("writing to memory cannot fail");
    }
    let bytes = w.into_inner().expect("writing to memory cannot fail");
    String::from_utf8(bytes).expect("the fields are UTF-8")
}

/// `godwit admin replication jobs`: every kept job with its progress.
pub(crate) async fn list(client: &AdminClient, json: bool) -> anyhow::Result<()> {
    let jobs: Vec<VerifyJob> = client
        .send(http::Method::GET, "/admin/v1/replication/jobs")
        .await?
        .json()
        .await?;
    if json {
        println!("{}", serde_json::to_string_pretty(&jobs)?);
        return Ok(());
    }
    let mut t = Table::new();
    t.set_header(vec![
        "id",
        "bucket",
        "level",
        "state",
        "rules done",
        "compared",
        "differing",
        "requeued",
    ]);
    for j in &jobs {
        let c = j.counts();
        t.add_row(vec![
            j.id.clone(),
            j.spec.bucket.clone(),
            j.spec.level.to_string(),
            j.state.as_str().to_string(),
            format!(
                "{}/{}",
                j.rules.iter().filter(|r| r.done).count(),
                j.rules.len()
            ),
            c.total().to_string(),
            c.differing().to_string(),
            j.requeued().to_string(),
        ]);
    }
    println!("{t}");
    Ok(())
}

/// `godwit admin replication cancel JOB_ID`.
pub(crate) async fn cancel(client: &AdminClient, json: bool, id: &str) -> anyhow::Result<()> {
    let path = format!("/admin/v1/replication/jobs/{}/cancel", percent_encode(id));
    let job: VerifyJob = client.send(http::Method::POST, &path).await?.json().await?;
    if json {
        println!("{}", serde_json::to_string_pretty(&job)?);
    } else {
        println!("verify job {id}: {}", job.state.as_str());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A key holding commas, quotes and a line break reads back whole.
    #[test]
    fn csv_rows_read_back() {
        use godwit_common::verify::{
            Difference, JobState, OutcomeCounts, RuleProgress, VerifySpec,
        };
        let job = VerifyJob {
            id: "j".into(),
            spec: VerifySpec {
                bucket: "b".into(),
                rule_id: None,
                prefix: String::new(),
                level: 1,
                repair: false,
            },
            state: JobState::Done,
            rules: vec![RuleProgress {
                rule_id: "r,1".into(),
                destination: "eu/d".into(),
                cursor: None,
                done: true,
                counts: OutcomeCounts {
                    missing: 1,
                    ..OutcomeCounts::default()
                },
                requeued: 0,
            }],
            differences: vec![Difference {
                rule_id: "r,1".into(),
                key: "a,\"b\"\nc".into(),
                outcome: Outcome::Missing,
                reason: "not at the destination".into(),
            }],
            created_ms: 0,
            updated_ms: 0,
            error: None,
        };
        let text = csv(&job);
        let rows: Vec<csv::StringRecord> = csv::Reader::from_reader(text.as_bytes())
            .records()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(rows.len(), Outcome::ALL.len() + 1);
        assert_eq!(
            rows[1].iter().take(4).collect::<Vec<_>>(),
            ["count", "r,1", Outcome::ALL[1].as_str(), "1"]
        );
        let last = rows.last().unwrap();
        assert_eq!(&last[4], "a,\"b\"\nc");
        assert_eq!(&last[2], "missing");
    }
}
