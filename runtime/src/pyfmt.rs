//! Python's float formatting, reproduced exactly: the report CSVs hold
//! `repr(float)` cells and the verdict messages hold `{:.6g}` numbers, and
//! both must match what the generated Python scripts write byte for byte.

/// `repr(x)` of a Python float: the shortest digits that round-trip, in
/// positional form (`1.0`, `0.0001`, `1234.5`) when the decimal exponent is
/// in -4..16, otherwise scientific (`1e-05`, `1.5e+16`); `nan`, `inf`, `-inf`.
pub fn repr(x: f64) -> String {
    if let Some(s) = non_finite(x) {
        return s.into();
    }
    let sign = if x.is_sign_negative() { "-" } else { "" };
    if x == 0.0 {
        return format!("{sign}0.0");
    }
    let (digits, exp) = shortest(x.abs());
    if (-4..16).contains(&exp) {
        let (int, frac) = positional(&digits, exp);
        format!("{sign}{int}.{}", if frac.is_empty() { "0" } else { &frac })
    } else {
        format!("{sign}{}", scientific(&digits, exp))
    }
}

/// `format(x, ".6g")`: six significant digits, round-half-even on the exact
/// value, trailing zeros removed, positional when the exponent is in -4..6.
pub fn format_g6(x: f64) -> String {
    const P: i32 = 6;
    if let Some(s) = non_finite(x) {
        return s.into();
    }
    let sign = if x.is_sign_negative() { "-" } else { "" };
    if x == 0.0 {
        return format!("{sign}0");
    }
    let (digits, exp) = split(&format!("{:.*e}", (P - 1) as usize, x.abs()));
    let digits = digits.trim_end_matches('0');
    let digits = if digits.is_empty() { "0" } else { digits };
    if (-4..P).contains(&exp) {
        let (int, frac) = positional(digits, exp);
        if frac.is_empty() {
            format!("{sign}{int}")
        } else {
            format!("{sign}{int}.{frac}")
        }
    } else {
        format!("{sign}{}", scientific(digits, exp))
    }
}

/// The shortest round-trip digits of `x > 0` and its decimal exponent, as
/// Python's `repr` chooses them. Rust's `{:e}` finds the same number of
/// digits, but when two candidates are equally near `x` it may take the
/// upper one where Python rounds half to even (`1584391378837919.25` is
/// `...919.2` in Python). The correctly rounded value with that many digits
/// is Python's choice whenever it round-trips.
fn shortest(x: f64) -> (String, i32) {
    let (digits, exp) = split(&format!("{x:e}"));
    let rounded = format!("{:.*e}", digits.len() - 1, x);
    if rounded.parse::<f64>() == Ok(x) {
        split(&rounded)
    } else {
        (digits, exp)
    }
}

fn non_finite(x: f64) -> Option<&'static str> {
    if x.is_nan() {
        Some("nan")
    } else if x.is_infinite() {
        Some(if x > 0.0 { "inf" } else { "-inf" })
    } else {
        None
    }
}

/// `"1.2345e-3"` to (`"12345"`, -3).
fn split(sci: &str) -> (String, i32) {
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci, "0"));
    (mantissa.replace('.', ""), exp.parse().unwrap_or(0))
}

/// Digits `d1d2...` times 10^(exp) as integer and fraction digit strings
/// (fraction without trailing zeros).
fn positional(digits: &str, exp: i32) -> (String, String) {
    if exp < 0 {
        let zeros = "0".repeat((-exp - 1) as usize);
        ("0".into(), format!("{zeros}{digits}").trim_end_matches('0').into())
    } else {
        let point = exp as usize + 1;
        if digits.len() <= point {
            (format!("{digits}{}", "0".repeat(point - digits.len())), String::new())
        } else {
            let (int, frac) = digits.split_at(point);
            (int.into(), frac.trim_end_matches('0').into())
        }
    }
}

/// `d.ddde±XX`, as Python writes exponents (sign always, at least 2 digits).
fn scientific(digits: &str, exp: i32) -> String {
    let (first, rest) = digits.split_at(digits.len().min(1));
    let mantissa = if rest.is_empty() { first.to_string() } else { format!("{first}.{rest}") };
    let sign = if exp < 0 { '-' } else { '+' };
    format!("{mantissa}e{sign}{:02}", exp.unsigned_abs())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn g6_matches_python() {
        for (x, want) in [
            (0.0280359, "0.0280359"),
            (1.11035, "1.11035"),
            (0.000198623, "0.000198623"),
            (1e-05, "1e-05"),
            (1.5e20, "1.5e+20"),
            (0.0, "0"),
            (-0.0, "-0"),
            (1.0, "1"),
            (0.99, "0.99"),
            (123456.0, "123456"),
            (1234567.0, "1.23457e+06"),
            (1234565.0, "1.23456e+06"),
            (0.9999995, "1"),
            (999999.5, "1e+06"),
            (0.00012345678, "0.000123457"),
            (-2.5e-300, "-2.5e-300"),
            (5e-324, "4.94066e-324"),
            (f64::NAN, "nan"),
            (f64::NEG_INFINITY, "-inf"),
        ] {
            assert_eq!(format_g6(x), want, "{x:?}");
        }
    }

    #[test]
    fn repr_matches_python() {
        for (x, want) in [
            (1.0, "1.0"),
            (0.0, "0.0"),
            (-0.0, "-0.0"),
            (1e-08, "1e-08"),
            (1.5e16, "1.5e+16"),
            (2.5e-05, "2.5e-05"),
            (0.0001, "0.0001"),
            (1e16, "1e+16"),
            (9999999999999998.0, "9999999999999998.0"),
            (123.456, "123.456"),
            (0.1 + 0.2, "0.30000000000000004"),
            (1_584_391_378_837_919.0 + 0.25, "1584391378837919.2"),
            (1_584_391_378_837_919.0 + 0.75, "1584391378837919.8"),
            (1e300, "1e+300"),
            (5e-324, "5e-324"),
            (f64::MAX, "1.7976931348623157e+308"),
            (f64::INFINITY, "inf"),
            (f64::NAN, "nan"),
        ] {
            assert_eq!(repr(x), want, "{x:?}");
        }
    }
}
