//! A request document read into a small tree of elements, for the
//! configuration documents whose rules serde cannot say: repeated
//! elements in any order, values whose spaces matter, unknown elements
//! refused rather than skipped, an element given twice told apart from
//! one given once. Anything that is not one well-formed UTF-8 document
//! is `MalformedXML`.

use quick_xml::events::Event;

use crate::error::S3Error;

/// Deepest nesting read; S3's configuration documents need four levels.
const MAX_DEPTH: usize = 16;

/// One element: its local name (namespace prefix dropped), its child
/// elements in order, and the text directly inside it, unescaped and
/// untrimmed (comments and processing instructions dropped, CDATA kept).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Element {
    pub name: String,
    pub children: Vec<Element>,
    pub text: String,
}

impl Element {
    /// Whether the text directly inside is only whitespace (a container
    /// holds nothing but its children).
    pub fn blank(&self) -> bool {
        self.text.chars().all(char::is_whitespace)
    }

    /// The element's text, if it is a leaf (no child element).
    pub fn leaf_text(&self) -> Result<&str, S3Error> {
        match self.children.is_empty() {
            true => Ok(&self.text),
            false => Err(S3Error::MalformedXML),
        }
    }
}

/// Reads `body` (a UTF-8 byte order mark allowed) into its root element.
pub fn parse(body: &[u8]) -> Result<Element, S3Error> {
    let body = body.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(body);
    std::str::from_utf8(body).map_err(|_| S3Error::MalformedXML)?;
    let mut reader = quick_xml::Reader::from_reader(body);
    let mut stack: Vec<Element> = Vec::new();
    let mut root: Option<Element> = None;
    let bad = |_| S3Error::MalformedXML;
    loop {
        let event = reader.read_event().map_err(bad)?;
        match event {
            Event::Start(e) => {
                room_for_one_more(&stack, &root)?;
                stack.push(element(&e));
            }
            Event::Empty(e) => {
                room_for_one_more(&stack, &root)?;
                attach(&mut stack, &mut root, element(&e));
            }
            Event::End(_) => {
                let done = stack.pop().ok_or(S3Error::MalformedXML)?;
                attach(&mut stack, &mut root, done);
            }
            Event::Text(t) => {
                let text = t.unescape().map_err(bad)?;
                match stack.last_mut() {
                    Some(open) => open.text.push_str(&text),
                    None if text.chars().all(char::is_whitespace) => {}
                    None => return Err(S3Error::MalformedXML),
                }
            }
            Event::CData(c) => {
                let text = std::str::from_utf8(&c).map_err(|_| S3Error::MalformedXML)?;
                stack
                    .last_mut()
                    .ok_or(S3Error::MalformedXML)?
                    .text
                    .push_str(text);
            }
            // S3's request bodies have no DTD (see `xml::parse`).
            Event::DocType(_) => return Err(S3Error::MalformedXML),
            Event::Decl(_) | Event::PI(_) | Event::Comment(_) => {}
            Event::Eof => break,
        }
    }
    match (root, stack.is_empty()) {
        (Some(root), true) => Ok(root),
        _ => Err(S3Error::MalformedXML),
    }
}

fn element(start: &quick_xml::events::BytesStart<'_>) -> Element {
    Element {
        name: String::from_utf8_lossy(start.local_name().as_ref()).into_owned(),
        ..Default::default()
    }
}

/// An element may open only inside the root, and not too deep.
fn room_for_one_more(stack: &[Element], root: &Option<Element>) -> Result<(), S3Error> {
    match root.is_none() && stack.len() < MAX_DEPTH {
        true => Ok(()),
        false => Err(S3Error::MalformedXML),
    }
}

/// Hangs a finished element under the open one, or makes it the root.
fn attach(stack: &mut [Element], root: &mut Option<Element>, done: Element) {
    match stack.last_mut() {
        Some(parent) => parent.children.push(done),
        None => *root = Some(done),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_names_text_and_children_as_sent() {
        let doc = parse(
            "\u{feff}<?xml version=\"1.0\"?>\n<s3:A xmlns:s3=\"ns\"><!-- c --><B> x &amp; y </B>\
             <B><![CDATA[<raw>]]></B><C/></s3:A>\n"
                .as_bytes(),
        )
        .unwrap();
        assert_eq!(doc.name, "A");
        let names: Vec<&str> = doc.children.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["B", "B", "C"]);
        assert_eq!(doc.children[0].text, " x & y ");
        assert_eq!(doc.children[1].text, "<raw>");
        assert_eq!(doc.children[2].text, "");
        assert!(doc.blank());
    }

    #[test]
    fn anything_but_one_document_is_malformed() {
        for body in [
            &b""[..],
            b"text",
            b"<A>",
            b"<A></B>",
            b"<A/><B/>",
            b"<A/>text",
            b"<!DOCTYPE A><A/>",
            b"<A>\xff</A>",
            b"<A>&bogus;</A>",
        ] {
            assert!(
                matches!(parse(body), Err(S3Error::MalformedXML)),
                "{}",
                String::from_utf8_lossy(body)
            );
        }
        let deep = "<a>".repeat(MAX_DEPTH + 1) + &"</a>".repeat(MAX_DEPTH + 1);
        assert!(parse(deep.as_bytes()).is_err());
        let ok = "<a>".repeat(MAX_DEPTH) + &"</a>".repeat(MAX_DEPTH);
        assert!(parse(ok.as_bytes()).is_ok());
    }
}
