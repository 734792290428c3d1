use super::*;

const ORIGIN: &str = "<AllowedOrigin>https://example.com</AllowedOrigin>";
const METHOD: &str = "<AllowedMethod>GET</AllowedMethod>";

/// A document whose rules hold the given elements.
fn doc(rules: &[&str]) -> String {
    let mut s =
        String::from("<CORSConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">");
    for r in rules {
        s.push_str(&format!("<CORSRule>{r}</CORSRule>"));
    }
    s.push_str("</CORSConfiguration>");
    s
}

fn minimal() -> String {
    format!("{ORIGIN}{METHOD}")
}

fn s3(body: &str) -> Result<CorsConfiguration, S3Error> {
    parse_cors(body.as_bytes(), &S3_CORS)
}

fn invalid_request(r: Result<CorsConfiguration, S3Error>) -> String {
    match r {
        Err(S3Error::InvalidRequest(m)) => m,
        other => panic!("expected InvalidRequest, got {other:?}"),
    }
}

#[test]
fn every_element_of_a_rule_is_read_as_sent() {
    let body = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<CORSConfiguration>\n <CORSRule>\n\
        <ID>rule-1</ID><AllowedOrigin>https://*.example.com</AllowedOrigin>\
        <AllowedOrigin> HTTPS://Example.COM\n</AllowedOrigin>\
        <AllowedMethod>PUT</AllowedMethod><AllowedMethod>HEAD</AllowedMethod>\
        <AllowedHeader>x-amz-*</AllowedHeader><ExposeHeader>ETag</ExposeHeader>\
        <MaxAgeSeconds>0042</MaxAgeSeconds>\n </CORSRule>\n <CORSRule>\
        <AllowedMethod>GET</AllowedMethod><AllowedOrigin>*</AllowedOrigin></CORSRule>\
        </CORSConfiguration>";
    let cfg = s3(body).unwrap();
    assert_eq!(cfg.rules.len(), 2);
    let r = &cfg.rules[0];
    assert_eq!(r.id.as_deref(), Some("rule-1"));
    assert_eq!(
        r.allowed_origins,
        ["https://*.example.com", " HTTPS://Example.COM\n"]
    );
    assert_eq!(r.allowed_methods, [CorsMethod::Put, CorsMethod::Head]);
    assert_eq!(r.allowed_headers, ["x-amz-*"]);
    assert_eq!(r.expose_headers, ["ETag"]);
    assert_eq!(r.max_age_seconds, Some(42));
    assert_eq!(cfg.rules[1].id, None);
    assert_eq!(cfg.rules[1].max_age_seconds, None);
    assert_eq!(cfg.response_vary, None);
}

#[test]
fn limits_of_s3() {
    let m = minimal();
    assert_eq!(s3(&doc(&[m.as_str(); 100])).unwrap().rules.len(), 100);
    let id255 = format!("{m}<ID>{}</ID>", "a".repeat(255));
    assert!(s3(&doc(&[&id255])).is_ok());
    let max = format!("{m}<MaxAgeSeconds>2147483647</MaxAgeSeconds>");
    assert_eq!(
        s3(&doc(&[&max])).unwrap().rules[0].max_age_seconds,
        Some(2_147_483_647)
    );
    let star = "<AllowedOrigin>*</AllowedOrigin><AllowedMethod>GET</AllowedMethod>\
                <AllowedHeader>*</AllowedHeader><AllowedHeader>x-*-id</AllowedHeader>";
    assert!(s3(&doc(&[star])).is_ok());
}

#[test]
fn structure_errors_are_malformed_xml() {
    let m = minimal();
    let bodies = [
        String::new(),
        "not xml".into(),
        "<CORSConfiguration/>".into(),
        doc(&[]),
        doc(&[""]),
        doc(&[ORIGIN]),
        doc(&[METHOD]),
        doc(&[&m, METHOD]),
        doc(&[m.as_str(); 101]),
        format!("<CORSRules><CORSRule>{m}</CORSRule></CORSRules>"),
        format!("<CORSConfiguration>{m}</CORSConfiguration>"),
        format!("<CORSConfiguration>x<CORSRule>{m}</CORSRule></CORSConfiguration>"),
        format!("<CORSConfiguration><CORSRule>{m}</CORSRule><Owner/></CORSConfiguration>"),
        format!("<CORSConfiguration><CORSRule>{m}</CORSRule><ResponseVary>true</ResponseVary></CORSConfiguration>"),
        doc(&[&format!("{m}text")]),
        doc(&[&format!("{m}<AllowedHeaders>*</AllowedHeaders>")]),
        doc(&[&format!("{m}<allowedheader>*</allowedheader>")]),
        doc(&[&format!("<AllowedOrigin><O>*</O></AllowedOrigin>{METHOD}")]),
        doc(&[&format!("{m}<MaxAgeSeconds></MaxAgeSeconds>")]),
        doc(&[&format!("{m}<MaxAgeSeconds>-1</MaxAgeSeconds>")]),
        doc(&[&format!("{m}<MaxAgeSeconds>1.5</MaxAgeSeconds>")]),
        doc(&[&format!("{m}<MaxAgeSeconds> 1</MaxAgeSeconds>")]),
        doc(&[&format!("{m}<MaxAgeSeconds>2147483648</MaxAgeSeconds>")]),
        doc(&[&format!(
            "{m}<MaxAgeSeconds>1</MaxAgeSeconds><MaxAgeSeconds>1</MaxAgeSeconds>"
        )]),
        doc(&[&format!("{m}<ID>{}</ID>", "a".repeat(256))]),
        doc(&[&format!("{m}<ID>a</ID><ID>b</ID>")]),
        // Structure first: a bad method does not hide a missing origin.
        doc(&["<AllowedMethod>PATCH</AllowedMethod>"]),
        doc(&[
            "<AllowedOrigin>*.*</AllowedOrigin><AllowedMethod>GET</AllowedMethod>",
            METHOD,
        ]),
    ];
    for body in bodies {
        assert!(matches!(s3(&body), Err(S3Error::MalformedXML)), "{body}");
    }
}

#[test]
fn value_errors_are_invalid_request_with_s3_messages() {
    for m in ["PATCH", "OPTIONS", "get", " GET", "GET,PUT", "*", ""] {
        let rule = format!("{ORIGIN}{METHOD}<AllowedMethod>{m}</AllowedMethod>");
        assert_eq!(
            invalid_request(s3(&doc(&[&rule]))),
            format!("Found unsupported HTTP method in CORS config. Unsupported method is {m}")
        );
    }
    let m = minimal();
    let cases = [
        (
            format!("<AllowedOrigin>https://*.example.*</AllowedOrigin>{METHOD}"),
            "AllowedOrigin \"https://*.example.*\" can not have more than one wildcard.",
        ),
        (
            format!("{m}<AllowedHeader>x-amz-*</AllowedHeader><AllowedHeader>**</AllowedHeader>"),
            "AllowedHeader \"**\" can not have more than one wildcard.",
        ),
        (
            format!("{m}<ExposeHeader>ETag</ExposeHeader><ExposeHeader>x-amz-*</ExposeHeader>"),
            "ExposeHeader \"x-amz-*\" contains wildcard. We currently do not support wildcard \
             for ExposeHeader.",
        ),
        (
            format!("<AllowedOrigin>*&lt;&amp;&gt;*</AllowedOrigin>{METHOD}"),
            "AllowedOrigin \"*<&>*\" can not have more than one wildcard.",
        ),
    ];
    for (rule, want) in cases {
        assert_eq!(invalid_request(s3(&doc(&[&m, &rule]))), want, "{rule}");
    }
    // Within a rule: methods, then origins, then headers, then exposed
    // headers; rules in order.
    let all_bad = "<ExposeHeader>x-*</ExposeHeader><AllowedHeader>*-*</AllowedHeader>\
                   <AllowedOrigin>*.*</AllowedOrigin><AllowedMethod>PATCH</AllowedMethod>";
    assert!(invalid_request(s3(&doc(&[all_bad]))).starts_with("Found unsupported HTTP method"));
    let no_method = all_bad.replace("PATCH", "GET");
    assert!(invalid_request(s3(&doc(&[&no_method]))).starts_with("AllowedOrigin"));
    let later = format!("{m}<ExposeHeader>x-*</ExposeHeader>");
    let last = format!("{ORIGIN}<AllowedMethod>PATCH</AllowedMethod>");
    assert!(invalid_request(s3(&doc(&[&m, &later, &last]))).starts_with("ExposeHeader"));
}

#[test]
fn another_schema_takes_response_vary_refuses_ids_and_keeps_its_error() {
    const OSS: CorsSchema = CorsSchema {
        max_rules: 10,
        ids: false,
        response_vary: true,
        invalid: S3Error::InvalidArgument,
    };
    let m = minimal();
    let body = format!("<CORSConfiguration><CORSRule>{m}</CORSRule><ResponseVary>true</ResponseVary></CORSConfiguration>");
    let cfg = parse_cors(body.as_bytes(), &OSS).unwrap();
    assert_eq!(cfg.response_vary, Some(true));
    assert!(matches!(
        parse_cors(doc(&[m.as_str(); 11]).as_bytes(), &OSS),
        Err(S3Error::MalformedXML)
    ));
    assert!(matches!(
        parse_cors(doc(&[&format!("{m}<ID>x</ID>")]).as_bytes(), &OSS),
        Err(S3Error::MalformedXML)
    ));
    let bad = format!("{ORIGIN}<AllowedMethod>PATCH</AllowedMethod>");
    assert!(matches!(
        parse_cors(doc(&[&bad]).as_bytes(), &OSS),
        Err(S3Error::InvalidArgument(_))
    ));
}

#[test]
fn renders_in_the_element_order_of_s3_and_reads_back() {
    let body = doc(&[
        "<ID>r1</ID><AllowedOrigin>https://a.example</AllowedOrigin><AllowedMethod>PUT</AllowedMethod>\
         <AllowedMethod>POST</AllowedMethod><AllowedHeader>*</AllowedHeader>\
         <ExposeHeader>ETag</ExposeHeader><MaxAgeSeconds>3000</MaxAgeSeconds>",
        "<AllowedOrigin>*</AllowedOrigin><AllowedMethod>GET</AllowedMethod><MaxAgeSeconds>0</MaxAgeSeconds>",
    ]);
    let cfg = s3(&body).unwrap();
    let out = render_cors(&cfg).unwrap();
    assert_eq!(
        out,
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
         <CORSConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><CORSRule>\
         <ID>r1</ID><AllowedMethod>PUT</AllowedMethod><AllowedMethod>POST</AllowedMethod>\
         <AllowedOrigin>https://a.example</AllowedOrigin><AllowedHeader>*</AllowedHeader>\
         <MaxAgeSeconds>3000</MaxAgeSeconds><ExposeHeader>ETag</ExposeHeader></CORSRule>\
         <CORSRule><AllowedMethod>GET</AllowedMethod><AllowedOrigin>*</AllowedOrigin>\
         <MaxAgeSeconds>0</MaxAgeSeconds></CORSRule></CORSConfiguration>"
    );
    assert_eq!(s3(&out).unwrap(), cfg);
    // Characters XML escapes survive the round trip.
    let odd = doc(&["<ID>&lt;a&gt; &amp; b</ID><AllowedOrigin>https://x/?a=1&amp;b=2</AllowedOrigin><AllowedMethod>GET</AllowedMethod>"]);
    let cfg = s3(&odd).unwrap();
    assert_eq!(cfg.rules[0].id.as_deref(), Some("<a> & b"));
    assert_eq!(s3(&render_cors(&cfg).unwrap()).unwrap(), cfg);
}
