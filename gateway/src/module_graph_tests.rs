//! The gateway's top-level modules form no cycle: the dialects (`s3`,
//! `oss`) never reach each other, and the neutral layer (`api`) reaches
//! neither. Read from the source: every `crate::<module>` path (in `use`
//! lines, `use crate::{a, b}` groups and inline paths) and every
//! `super::super::` that climbs to the crate root names an edge from the
//! module holding the file to that module. `lib.rs` is the root that
//! wires everything and is left out.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// One edge and the first place that makes it.
#[derive(Clone, Debug)]
struct Site {
    file: String,
    line: usize,
}

type Graph = BTreeMap<String, BTreeMap<String, Site>>;

/// Edges allowed to close a cycle, each with the reason. None today.
const ALLOWED: &[(&str, &str)] = &[];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("source folder") {
        let path = entry.expect("folder entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The top-level module a source file belongs to (`s3/list.rs` -> `s3`,
/// `names.rs` -> `names`, `router_tests.rs` -> `router`, whose
/// `#[path]` test module it is), None for `lib.rs`.
fn module_of(relative: &Path, src: &Path) -> Option<String> {
    let first = relative.components().next()?.as_os_str().to_str()?;
    let name = first.strip_suffix(".rs").unwrap_or(first);
    let name = match name.strip_suffix("_tests") {
        Some(owner) if src.join(format!("{owner}.rs")).exists() => owner,
        _ => name,
    };
    (name != "lib").then(|| name.to_string())
}

/// How deep below its top-level module a file's code sits, for
/// `super::` chains: `s3/mod.rs` is at 0, `s3/list.rs` at 1, `names.rs`
/// at 0. A `#[cfg(test)] mod tests` inside a file adds one level the
/// scan cannot see, so chains are resolved for the file's own level and
/// one deeper, and either reaching the root counts.
fn depth_of(relative: &Path) -> usize {
    let parts = relative.components().count();
    let is_mod = relative.file_name().is_some_and(|f| f == "mod.rs");
    if parts == 1 {
        0
    } else if is_mod {
        parts - 2
    } else {
        parts - 1
    }
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The modules a line names through `crate::` (also `crate::{a, b::c}`).
fn crate_targets(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = line;
    while let Some(at) = rest.find("crate::") {
        let before = rest[..at].chars().next_back();
        let after = &rest[at + "crate::".len()..];
        rest = after;
        // `godwit_crate::` or `my_crate::` are not ours.
        if before.is_some_and(is_ident) {
            continue;
        }
        if let Some(group) = after.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            for item in group[..end].split(',') {
                let name: String = item.trim().chars().take_while(|c| is_ident(*c)).collect();
                out.push(name);
            }
        } else {
            out.push(after.chars().take_while(|c| is_ident(*c)).collect());
        }
    }
    out.retain(|name| !name.is_empty());
    out
}

/// The modules a line names by climbing with `super::` from `depth`
/// (the file's own level or one deeper): a chain of `depth + 1`
/// `super::`s reaches the crate root and names the module after it.
fn super_targets(line: &str, depth: usize) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = line;
    while let Some(at) = rest.find("super::") {
        let before = rest[..at].chars().next_back();
        let mut after = &rest[at..];
        let mut climbs = 0;
        while let Some(next) = after.strip_prefix("super::") {
            climbs += 1;
            after = next;
        }
        rest = after;
        if before.is_some_and(|c| is_ident(c) || c == ':') {
            continue;
        }
        if climbs == depth + 1 || climbs == depth + 2 {
            let name: String = after.chars().take_while(|c| is_ident(*c)).collect();
            if !name.is_empty() {
                out.push(name);
            }
        }
    }
    out
}

/// The code of a line without its `//` comment and with string and
/// character literals emptied: prose and test data may name modules.
fn code_of(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '/' if chars.peek() == Some(&'/') => break,
            '"' => {
                out.push('"');
                while let Some(s) = chars.next() {
                    match s {
                        '\\' => {
                            chars.next();
                        }
                        '"' => break,
                        _ => {}
                    }
                }
                out.push('"');
            }
            // A character literal ('x', '\n'); a lifetime ('a) has no
            // closing quote and stays as it is.
            '\'' => {
                let rest: String = chars.clone().take(3).collect();
                let len = if rest.starts_with('\\') {
                    rest.find('\'').map(|_| 3)
                } else {
                    (rest.chars().nth(1) == Some('\'')).then_some(2)
                };
                if let Some(len) = len {
                    for _ in 0..len {
                        chars.next();
                    }
                    out.push_str("' '");
                } else {
                    out.push(c);
                }
            }
            _ => out.push(c),
        }
    }
    out
}

/// The code of a file line by line (1-based numbers), comments stripped,
/// with a `{ .. }` group opened on one line (`use crate::{`) joined up to
/// the line that closes it, so that a group spread over lines is one.
fn logical_lines(text: &str) -> Vec<(usize, String)> {
    let mut out: Vec<(usize, String)> = Vec::new();
    let mut open: Option<(usize, String)> = None;
    for (n, line) in text.lines().enumerate() {
        let code = code_of(line);
        if let Some((start, mut acc)) = open.take() {
            acc.push(' ');
            acc.push_str(code.trim());
            if code.contains('}') {
                out.push((start, acc));
            } else {
                open = Some((start, acc));
            }
            continue;
        }
        let opens_group = code
            .rfind("::{")
            .is_some_and(|at| !code[at..].contains('}'));
        if opens_group {
            open = Some((n + 1, code));
        } else {
            out.push((n + 1, code));
        }
    }
    out.extend(open);
    out
}

fn graph_of(src: &Path) -> Graph {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    files.sort();
    let top_level: BTreeSet<String> = files
        .iter()
        .filter_map(|f| module_of(f.strip_prefix(src).unwrap(), src))
        .collect();
    let mut graph = Graph::new();
    for file in &files {
        let relative = file.strip_prefix(src).unwrap();
        let Some(from) = module_of(relative, src) else {
            continue;
        };
        let depth = depth_of(relative);
        let text = std::fs::read_to_string(file).expect("source file");
        for (n, code) in logical_lines(&text) {
            let mut targets = crate_targets(&code);
            targets.extend(super_targets(&code, depth));
            for to in targets {
                if to != from && top_level.contains(&to) {
                    graph
                        .entry(from.clone())
                        .or_default()
                        .entry(to)
                        .or_insert(Site {
                            file: relative.display().to_string(),
                            line: n,
                        });
                }
            }
        }
    }
    for (from, to, _) in allowed() {
        if let Some(edges) = graph.get_mut(from) {
            edges.remove(to);
        }
    }
    graph
}

fn allowed() -> impl Iterator<Item = (&'static str, &'static str, &'static str)> {
    ALLOWED.iter().map(|(edge, why)| {
        let (from, to) = edge
            .split_once("->")
            .expect("an allowed edge reads `from->to`");
        (from.trim(), to.trim(), *why)
    })
}

/// A cycle of the graph, as the modules along it (first repeated last).
fn find_cycle(graph: &Graph) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &Graph,
        done: &mut BTreeSet<String>,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|n| n == node) {
            let mut cycle = path[at..].to_vec();
            cycle.push(node.to_string());
            return Some(cycle);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_string());
        for next in graph.get(node).into_iter().flat_map(|e| e.keys()) {
            if let Some(cycle) = visit(next, graph, done, path) {
                return Some(cycle);
            }
        }
        path.pop();
        done.insert(node.to_string());
        None
    }
    let mut done = BTreeSet::new();
    for node in graph.keys() {
        if let Some(cycle) = visit(node, graph, &mut done, &mut Vec::new()) {
            return Some(cycle);
        }
    }
    None
}

fn describe(graph: &Graph, cycle: &[String]) -> String {
    cycle
        .windows(2)
        .map(|w| {
            let site = &graph[&w[0]][&w[1]];
            format!("  {} -> {} ({}:{})", w[0], w[1], site.file, site.line)
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn source_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

#[test]
fn top_level_modules_form_no_cycle() {
    let graph = graph_of(&source_dir());
    if let Some(cycle) = find_cycle(&graph) {
        panic!(
            "the gateway's top-level modules import each other in a cycle:\n{}",
            describe(&graph, &cycle)
        );
    }
}

#[test]
fn dialects_stay_apart_and_api_names_neither() {
    let graph = graph_of(&source_dir());
    for (from, to) in [("s3", "oss"), ("oss", "s3"), ("api", "s3"), ("api", "oss")] {
        if let Some(site) = graph.get(from).and_then(|e| e.get(to)) {
            panic!("{from} must not import {to}: {}:{}", site.file, site.line);
        }
    }
}

#[test]
fn the_scan_sees_every_form_of_path() {
    assert_eq!(crate_targets("use crate::api::{Ctx, ApiResult};"), ["api"]);
    assert_eq!(
        crate_targets("use crate::{metrics, MAX_PUT_SIZE};"),
        ["metrics", "MAX_PUT_SIZE"]
    );
    assert_eq!(
        crate_targets("    x = crate::oss::ops::f(crate::s3::g());"),
        ["oss", "s3"]
    );
    assert!(crate_targets("use godwit_crate::oss;").is_empty());
    // From `s3/list.rs` (depth 1): two climbs reach the root, one does not;
    // three do from inside its `mod tests`.
    assert_eq!(super_targets("use super::super::oss::x;", 1), ["oss"]);
    assert_eq!(
        super_targets("use super::super::super::oss::x;", 1),
        ["oss"]
    );
    assert!(super_targets("use super::list::x;", 1).is_empty());
    assert_eq!(code_of("use crate::a; // crate::b"), "use crate::a; ");
    let line = "f(\"crate::oss \\\" crate::s3\", '\"', 'a', '\\'');";
    assert_eq!(code_of(line), "f(\"\", ' ', ' ', ' ');");
    assert_eq!(
        code_of("fn f<'a>(x: &'a str) {}"),
        "fn f<'a>(x: &'a str) {}"
    );
    let lines = logical_lines("use crate::{\n    api::Ctx,\n    oss,\n};\nuse crate::s3;\n");
    assert_eq!(lines.len(), 2);
    assert_eq!(
        (lines[0].0, crate_targets(&lines[0].1)),
        (1, vec!["api".into(), "oss".into()])
    );
    assert_eq!(lines[1].0, 5);
}

#[test]
fn a_cycle_is_found_and_named() {
    let site = |line| Site {
        file: "x.rs".into(),
        line,
    };
    let mut graph = Graph::new();
    graph
        .entry("s3".into())
        .or_default()
        .insert("api".into(), site(1));
    graph
        .entry("api".into())
        .or_default()
        .insert("xml".into(), site(2));
    assert!(find_cycle(&graph).is_none());
    graph
        .entry("xml".into())
        .or_default()
        .insert("s3".into(), site(3));
    let cycle = find_cycle(&graph).unwrap();
    assert_eq!(cycle.first(), cycle.last());
    assert!(describe(&graph, &cycle).contains("xml -> s3 (x.rs:3)"));
}
