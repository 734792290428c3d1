//! Fake CSV rows in the spirit of the seed's `faker` data
//! (`name,"address","text"`, 1 to 30 lines per file, CRLF between lines),
//! from a seeded RNG so a run can be repeated byte for byte.

use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::Rng;

const FIRST: &[&str] = &[
    "Haruto", "Yui", "Sota", "Hina", "Ren", "Aoi", "Minato", "Mei", "Riku", "Sakura", "Olivia",
    "Liam", "Emma", "Noah", "Ava", "Mateo", "Chloe", "Lucas", "Zoe", "Wei", "Li", "Fatima", "Omar",
    "Ines", "Lars",
];
const LAST: &[&str] = &[
    "Sato",
    "Suzuki",
    "Takahashi",
    "Tanaka",
    "Watanabe",
    "Ito",
    "Yamamoto",
    "Nakamura",
    "Smith",
    "Garcia",
    "Muller",
    "Rossi",
    "Dubois",
    "Kowalski",
    "Chen",
    "Wang",
    "Okafor",
    "Silva",
    "Jensen",
    "Novak",
];
const STREETS: &[&str] = &[
    "Sakura-dori",
    "Chuo-dori",
    "Maple Street",
    "Harbour Road",
    "Kanal Strasse",
    "Via Roma",
    "Rue du Lac",
    "Station Avenue",
    "Hill Lane",
    "Market Square",
];
const CITIES: &[&str] = &[
    "Hangzhou",
    "Shanghai",
    "Tokyo",
    "Osaka",
    "Sapporo",
    "Lisbon",
    "Oslo",
    "Auckland",
    "Nairobi",
    "Montreal",
    "Valparaiso",
    "Gdansk",
];
const WORDS: &[&str] = &[
    "replication",
    "bucket",
    "object",
    "region",
    "latency",
    "storage",
    "archive",
    "report",
    "invoice",
    "sensor",
    "reading",
    "batch",
    "daily",
    "update",
    "history",
    "record",
    "value",
    "total",
    "shipment",
    "order",
    "customer",
    "quarter",
    "north",
    "south",
    "river",
    "godwit",
];

fn pick<'a>(rng: &mut StdRng, list: &[&'a str]) -> &'a str {
    list.choose(rng).copied().unwrap_or("")
}

/// One CSV line: a name, a quoted address, a quoted sentence.
pub fn csv_line(rng: &mut StdRng) -> String {
    let name = format!("{} {}", pick(rng, FIRST), pick(rng, LAST));
    let address = format!(
        "{}-{} {}, {} {:03}-{:04}",
        rng.gen_range(1..40),
        rng.gen_range(1..30),
        pick(rng, STREETS),
        pick(rng, CITIES),
        rng.gen_range(100..1000),
        rng.gen_range(0..10_000)
    );
    let words = rng.gen_range(4..16);
    let mut text: Vec<&str> = (0..words).map(|_| pick(rng, WORDS)).collect();
    if let Some(first) = text.first_mut() {
        *first = capitalized(first);
    }
    format!(
        "{name},\"{address}\",\"{}. {} {:.2}\"",
        text.join(" "),
        pick(rng, WORDS),
        rng.gen_range(0.0..10_000.0)
    )
}

/// A file of 1 to 30 lines joined with CRLF, as the seed's script wrote.
pub fn csv_file(rng: &mut StdRng) -> String {
    let lines = rng.gen_range(1..=30);
    (0..lines)
        .map(|_| csv_line(rng))
        .collect::<Vec<_>>()
        .join("\r\n")
}

fn capitalized(word: &str) -> &'static str {
    // The word lists are static, so the capitalized forms can be too.
    match WORDS.iter().position(|w| *w == word) {
        Some(i) => CAPITALIZED[i],
        None => "Data",
    }
}

const CAPITALIZED: &[&str] = &[
    "Replication",
    "Bucket",
    "Object",
    "Region",
    "Latency",
    "Storage",
    "Archive",
    "Report",
    "Invoice",
    "Sensor",
    "Reading",
    "Batch",
    "Daily",
    "Update",
    "History",
    "Record",
    "Value",
    "Total",
    "Shipment",
    "Order",
    "Customer",
    "Quarter",
    "North",
    "South",
    "River",
    "Godwit",
];

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn files_have_1_to_30_csv_lines_of_three_fields() {
        assert_eq!(WORDS.len(), CAPITALIZED.len());
        let mut rng = StdRng::seed_from_u64(7);
        for _ in 0..200 {
            let file = csv_file(&mut rng);
            let lines: Vec<&str> = file.split("\r\n").collect();
            assert!((1..=30).contains(&lines.len()), "{}", lines.len());
            for line in lines {
                // name,"address","text": exactly four quote characters.
                assert_eq!(line.matches('"').count(), 4, "{line}");
                assert!(line.contains(",\""), "{line}");
            }
        }
    }

    #[test]
    fn the_same_seed_gives_the_same_file() {
        let a = csv_file(&mut StdRng::seed_from_u64(43));
        let b = csv_file(&mut StdRng::seed_from_u64(43));
        assert_eq!(a, b);
    }
}
