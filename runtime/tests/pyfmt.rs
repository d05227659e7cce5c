//! Float formatting against a table printed by Python (tests/data/pyfmt.json,
//! written by make_fixtures.py): `[bits as hex, repr(x), format(x, ".6g")]`.

use runtime::pyfmt::{format_g6, repr};

#[test]
fn repr_and_g6_match_python_on_the_table() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/pyfmt.json");
    let rows: Vec<[String; 3]> = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    assert!(rows.len() > 400);
    for [bits, want_repr, want_g6] in rows {
        let x = f64::from_bits(u64::from_str_radix(&bits, 16).unwrap());
        assert_eq!(repr(x), want_repr, "repr of {bits}");
        assert_eq!(format_g6(x), want_g6, "g6 of {bits}");
    }
}
