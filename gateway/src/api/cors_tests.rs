use super::*;
use godwit_common::bucket_config::CorsMethod::{Delete, Get, Head, Put};

fn rule(id: &str, origins: &[&str], methods: &[CorsMethod], headers: &[&str]) -> CorsRule {
    CorsRule {
        id: Some(id.into()),
        allowed_origins: origins.iter().map(|s| s.to_string()).collect(),
        allowed_methods: methods.to_vec(),
        allowed_headers: headers.iter().map(|s| s.to_string()).collect(),
        ..Default::default()
    }
}

fn config(rules: Vec<CorsRule>) -> CorsConfiguration {
    CorsConfiguration {
        rules,
        response_vary: None,
    }
}

fn names(list: &[&str]) -> Vec<String> {
    requested_headers(Some(&list.join(",")))
}

#[test]
fn origins_match_as_text_with_one_wildcard() {
    let cases = [
        ("*", "https://example.com", true),
        ("*", "null", true),
        ("https://example.com", "https://example.com", true),
        ("https://example.com", "http://example.com", false),
        ("https://example.com", "https://example.com:8443", false),
        ("https://example.com", "https://example.com/", false),
        ("https://*.example.com", "https://www.example.com", true),
        ("https://*.example.com", "https://a.b.example.com", true),
        ("https://*.example.com", "https://.example.com", true),
        ("https://*.example.com", "https://example.com", false),
        (
            "https://*.example.com",
            "https://www.example.com.evil",
            false,
        ),
        ("https://example.com:*", "https://example.com:8443", true),
        ("https://example.com:*", "https://example.com", false),
        ("http*://example.com", "https://example.com", true),
        ("prefix*", "prefix", true),
        ("*suffix", "a.suffix.b", false),
        // The text on either side of the wildcard does not overlap.
        ("https://a*a", "https://aa", true),
        ("https://a*a", "https://a", false),
        ("ab*ba", "aba", false),
        // Case matters in origins.
        ("https://example.com", "https://EXAMPLE.com", false),
        ("HTTPS://*.example.com", "https://www.example.com", false),
        ("https://*.example.com", "https://WWW.example.com", true),
    ];
    for (pattern, origin, want) in cases {
        assert_eq!(wildcard_match(pattern, origin), want, "{pattern} {origin}");
    }
}

#[test]
fn requested_headers_are_trimmed_lowercased_and_non_empty() {
    assert_eq!(
        requested_headers(Some("Content-Type,X-Amz-Date ,  x-amz-meta-Name")),
        ["content-type", "x-amz-date", "x-amz-meta-name"]
    );
    assert!(requested_headers(Some(" , ,")).is_empty());
    assert!(requested_headers(None).is_empty());
}

#[test]
fn headers_match_without_case_and_each_needs_a_pattern() {
    let cases: [(&[&str], &[&str], bool); 14] = [
        (&[], &[], true),
        (&["content-type"], &[], true),
        (&[], &["content-type"], false),
        (&["Content-Type"], &["CONTENT-TYPE"], true),
        (&["content-type"], &["content-type", "x-amz-date"], false),
        (
            &["content-type", "x-amz-date"],
            &["x-amz-date", "content-type"],
            true,
        ),
        (&["X-Amz-*"], &["x-amz-date", "x-amz-meta-a"], true),
        (&["x-amz-*"], &["x-amz-"], true),
        (&["x-amz-*"], &["x-amz"], false),
        (&["x-amz-*"], &["x-amzn-trace-id"], false),
        (&["*"], &["authorization", "x-custom"], true),
        (&["*-type"], &["content-types"], false),
        (&["x-*-id"], &["x--id"], true),
        (&[" x-amz-date "], &["x-amz-date"], true),
    ];
    for (allowed, asked, want) in cases {
        let cfg = config(vec![rule("r", &["*"], &[Get], allowed)]);
        let got = find_rule(&cfg, "https://example.com", Get, &names(asked)).is_some();
        assert_eq!(got, want, "{allowed:?} {asked:?}");
    }
}

#[test]
fn the_first_rule_that_allows_all_three_answers() {
    let exact = rule("exact", &["https://example.com"], &[Get, Put], &[]);
    let pattern = rule("pattern", &["https://*.com"], &[Get], &["*"]);
    let any = rule("any", &["*"], &[Get, Head], &[]);
    let pick = |rules: &[&CorsRule], method, headers: &[&str]| {
        let cfg = config(rules.iter().map(|r| (*r).clone()).collect());
        find_rule(&cfg, "https://example.com", method, &names(headers)).and_then(|r| r.id.clone())
    };
    assert_eq!(
        pick(&[&exact, &pattern, &any], Get, &[]).as_deref(),
        Some("exact")
    );
    assert_eq!(
        pick(&[&any, &pattern, &exact], Get, &[]).as_deref(),
        Some("any")
    );
    assert_eq!(
        pick(&[&pattern, &exact, &any], Put, &[]).as_deref(),
        Some("exact")
    );
    assert_eq!(
        pick(&[&exact, &pattern, &any], Head, &[]).as_deref(),
        Some("any")
    );
    assert_eq!(
        pick(&[&exact, &pattern, &any], Get, &["x-amz-date"]).as_deref(),
        Some("pattern")
    );
    assert_eq!(pick(&[&exact, &pattern, &any], Delete, &[]), None);
    // Origin, method and headers must all be allowed by the same rule.
    let origin_only = rule("o", &["https://example.com"], &[Put], &[]);
    let method_only = rule("m", &["https://example.org"], &[Get], &["*"]);
    assert_eq!(pick(&[&origin_only, &method_only], Get, &[]), None);
    assert_eq!(pick(&[], Get, &[]), None);
}

fn answer(rule: &CorsRule, origin: &str, headers: &[&str]) -> Vec<(String, String)> {
    let mut out = HeaderMap::new();
    rule_headers(rule, origin, &names(headers), &mut out);
    out.iter()
        .map(|(k, v)| (k.to_string(), v.to_str().unwrap().to_string()))
        .collect()
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn a_named_origin_is_echoed_with_credentials_in_s3_order() {
    let mut r = rule(
        "site",
        &["https://example.com", "https://*.example.com"],
        &[Get, Put, Delete],
        &["Content-Type", "x-amz-*"],
    );
    r.expose_headers = vec!["ETag".into(), "x-amz-request-id".into()];
    r.max_age_seconds = Some(3000);
    assert_eq!(
        answer(
            &r,
            "https://app.example.com",
            &["Content-Type", "X-Amz-Date"]
        ),
        pairs(&[
            ("access-control-allow-origin", "https://app.example.com"),
            ("access-control-allow-methods", "GET, PUT, DELETE"),
            ("access-control-allow-headers", "content-type, x-amz-date"),
            ("access-control-expose-headers", "ETag, x-amz-request-id"),
            ("access-control-max-age", "3000"),
            ("access-control-allow-credentials", "true"),
            ("vary", VARY),
        ])
    );
}

#[test]
fn the_literal_star_answers_star_without_credentials() {
    // Even when the rule names the origin too.
    let mut r = rule("any", &["https://example.com", "*"], &[Get, Head], &[]);
    r.max_age_seconds = Some(0);
    assert_eq!(
        answer(&r, "https://example.com", &[]),
        pairs(&[
            ("access-control-allow-origin", "*"),
            ("access-control-allow-methods", "GET, HEAD"),
            ("access-control-max-age", "0"),
            ("vary", VARY),
        ])
    );
    // A pattern that matches every origin is not the literal star.
    let r = rule("p", &["http*"], &[Get], &[]);
    let got = answer(&r, "https://example.com", &[]);
    assert!(got.contains(&(
        "access-control-allow-origin".into(),
        "https://example.com".into()
    )));
    assert!(got.contains(&("access-control-allow-credentials".into(), "true".into())));
}

#[test]
fn stored_values_that_are_not_header_text_are_left_out() {
    let mut r = rule("x", &["*"], &[Get], &[]);
    r.expose_headers = vec!["ETag\n".into()];
    let got = answer(&r, "https://example.com", &[]);
    assert!(got
        .iter()
        .all(|(k, _)| k != "access-control-expose-headers"));
    assert!(got.iter().any(|(k, _)| k == "access-control-allow-origin"));
}
