//! Number parsing that accepts what the C library functions HPROF used
//! (`strtol`, `strtod`) accept, so that option values keep their meaning.
//!
//! Only the C locale is modelled (the decimal point is always `.`).

/// The characters C's `isspace` accepts in the C locale.
fn is_c_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// Skips leading C whitespace and returns the offset of the first other byte.
fn skip_space(s: &[u8]) -> usize {
    s.iter().take_while(|&&b| is_c_space(b)).count()
}

/// Reads an optional `+` or `-` at `s[i]`: returns (negative, next offset).
fn sign(s: &[u8], i: usize) -> (bool, usize) {
    match s.get(i) {
        Some(b'-') => (true, i + 1),
        Some(b'+') => (false, i + 1),
        _ => (false, i),
    }
}

/// Like C `strtol(s, &end, base)` on a 64-bit `long`, for `base` 0 or 10.
///
/// Returns the value (clamped to `i64::MIN..=i64::MAX` on overflow, as C does)
/// and how many bytes were consumed; 0 bytes consumed means "no conversion"
/// (the value is then 0). With base 0 a `0x`/`0X` prefix selects hexadecimal
/// and a leading `0` selects octal.
pub(crate) fn strtol(s: &str, base: u32) -> (i64, usize) {
    debug_assert!(base == 0 || base == 10);
    let s = s.as_bytes();
    let (negative, mut i) = sign(s, skip_space(s));
    let hex_digit_after_prefix = s.get(i + 2).is_some_and(u8::is_ascii_hexdigit);
    let radix = match (base, s.get(i), s.get(i + 1)) {
        (0, Some(b'0'), Some(b'x' | b'X')) if hex_digit_after_prefix => {
            i += 2;
            16
        }
        (0, Some(b'0'), _) => 8,
        _ => 10,
    };
    let digits_start = i;
    let mut magnitude: u64 = 0;
    let mut overflow = false;
    while let Some(d) = s.get(i).and_then(|&b| (b as char).to_digit(radix)) {
        match magnitude
            .checked_mul(u64::from(radix))
            .and_then(|m| m.checked_add(u64::from(d)))
        {
            Some(m) => magnitude = m,
            None => overflow = true,
        }
        i += 1;
    }
    if i == digits_start {
        return (0, 0);
    }
    let value = if negative {
        if overflow || magnitude > i64::MIN.unsigned_abs() {
            i64::MIN
        } else {
            0i64.wrapping_sub_unsigned(magnitude)
        }
    } else if overflow || magnitude > i64::MAX as u64 {
        i64::MAX
    } else {
        magnitude as i64
    };
    (value, i)
}

/// Like C `strtod(s, &end)` where the whole of `s` must be consumed.
///
/// Accepts leading whitespace, a sign, decimal numbers with an optional
/// exponent, hexadecimal floats (`0x1.8p3`), `inf`, `infinity` and `nan`
/// (any case, `nan` optionally followed by `(chars)`). Returns `None` when C
/// would stop before the end of the string.
pub(crate) fn strtod_all(s: &str) -> Option<f64> {
    let bytes = s.as_bytes();
    let (negative, start) = sign(bytes, skip_space(bytes));
    let body = &s[start..];
    let magnitude = if let Some(hex) = body.strip_prefix("0x").or_else(|| body.strip_prefix("0X")) {
        hex_float(hex)?
    } else if is_nan_with_payload(body) {
        f64::NAN
    } else {
        // Rust's grammar for the unsigned part (digits, `.`, exponent, inf,
        // infinity, nan, all case-insensitive) is the same as C's; only
        // reject a second sign, which Rust would otherwise take.
        if body.starts_with(['+', '-']) {
            return None;
        }
        body.parse::<f64>().ok()?
    };
    Some(if negative { -magnitude } else { magnitude })
}

/// `nan(` n-char-sequence `)`, which C accepts and Rust does not.
fn is_nan_with_payload(body: &str) -> bool {
    let Some(inner) = body
        .get(..4)
        .filter(|p| p.eq_ignore_ascii_case("nan("))
        .and_then(|_| body[4..].strip_suffix(')'))
    else {
        return false;
    };
    inner
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// The part of a hexadecimal float after `0x`: hex digits with an optional
/// point (at least one digit), then an optional binary exponent `p[+-]digits`.
fn hex_float(s: &str) -> Option<f64> {
    let (mantissa, exponent) = match s.find(['p', 'P']) {
        Some(p) => (&s[..p], Some(&s[p + 1..])),
        None => (s, None),
    };
    let (int_part, frac_part) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let all_hex = |t: &str| t.bytes().all(|b| b.is_ascii_hexdigit());
    if int_part.len() + frac_part.len() == 0 || !all_hex(int_part) || !all_hex(frac_part) {
        return None;
    }
    let mut exp2: i64 = match exponent {
        None => 0,
        Some(e) => {
            let digits = e.strip_prefix(['+', '-']).unwrap_or(e);
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            let (value, _) = strtol(e, 10);
            value.clamp(-100_000, 100_000)
        }
    };
    // Keep the first 15 significant hex digits exactly (60 bits, more than
    // an f64 holds); later digits only move the binary point.
    let mut bits: u64 = 0;
    let mut kept = 0;
    for (i, b) in int_part.bytes().chain(frac_part.bytes()).enumerate() {
        let in_fraction = i >= int_part.len();
        let d = u64::from((b as char).to_digit(16).unwrap_or(0));
        if kept < 15 {
            if bits != 0 || d != 0 {
                kept += 1;
            }
            bits = bits * 16 + d;
            if in_fraction {
                exp2 -= 4;
            }
        } else if !in_fraction {
            exp2 += 4;
        }
    }
    Some(scale_by_power_of_two(bits as f64, exp2))
}

/// `x * 2^exp` without overflowing or underflowing the intermediate powers.
fn scale_by_power_of_two(mut x: f64, mut exp: i64) -> f64 {
    while exp > 0 && x.is_finite() && x != 0.0 {
        let step = exp.min(1000);
        x *= 2f64.powi(step as i32);
        exp -= step;
    }
    while exp < 0 && x != 0.0 {
        let step = exp.max(-1000);
        x *= 2f64.powi(step as i32);
        exp -= step;
    }
    x
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strtol_like_c() {
        // (input, base, (value, bytes consumed))
        let cases: &[(&str, u32, (i64, usize))] = &[
            ("42", 10, (42, 2)),
            ("  42", 10, (42, 4)),
            ("\t\n+7", 10, (7, 4)),
            ("-0", 10, (0, 2)),
            ("-12x", 10, (-12, 3)),
            ("0x10", 10, (0, 1)),
            ("010", 10, (10, 3)),
            ("", 10, (0, 0)),
            ("abc", 10, (0, 0)),
            ("+", 10, (0, 0)),
            (" ", 10, (0, 0)),
            ("99999999999999999999", 10, (i64::MAX, 20)),
            ("-99999999999999999999", 10, (i64::MIN, 21)),
            ("-9223372036854775808", 10, (i64::MIN, 20)),
            ("9223372036854775807", 10, (i64::MAX, 19)),
            ("0x1F", 0, (31, 4)),
            ("0XfF", 0, (255, 4)),
            ("-0x10", 0, (-16, 5)),
            ("0x", 0, (0, 1)),
            ("0xg", 0, (0, 1)),
            ("017", 0, (15, 3)),
            ("08", 0, (0, 1)),
            ("0", 0, (0, 1)),
            ("12abc", 0, (12, 2)),
            ("junk", 0, (0, 0)),
            (" 0x4", 0, (4, 4)),
            ("0x7fffffffffffffff", 0, (i64::MAX, 18)),
            ("0xffffffffffffffffff", 0, (i64::MAX, 20)),
        ];
        for &(input, base, expected) in cases {
            assert_eq!(strtol(input, base), expected, "strtol({input:?}, {base})");
        }
    }

    #[test]
    fn strtod_accepts_what_c_accepts() {
        let cases: &[(&str, f64)] = &[
            ("0.0001", 0.0001),
            ("1", 1.0),
            ("1.", 1.0),
            (".5", 0.5),
            ("1e-3", 0.001),
            ("1E+2", 100.0),
            ("  2.5", 2.5),
            ("+3", 3.0),
            ("-0", -0.0),
            ("-1.5", -1.5),
            ("inf", f64::INFINITY),
            ("INFINITY", f64::INFINITY),
            ("-Inf", f64::NEG_INFINITY),
            ("0x10", 16.0),
            ("0x1.8p1", 3.0),
            ("0X.8", 0.5),
            ("0x1p-2", 0.25),
            ("0x1P+4", 16.0),
            (
                "0x123456789abcdef0123",
                0x0123_4567_89ab_cdef_0123_u128 as f64,
            ),
            ("0x1p-1074", 5e-324),
            ("0x1p99999", f64::INFINITY),
        ];
        for &(input, expected) in cases {
            let got = strtod_all(input);
            assert_eq!(got, Some(expected), "strtod_all({input:?})");
            assert_eq!(
                got.map(f64::is_sign_negative),
                Some(expected.is_sign_negative()),
                "sign of {input:?}"
            );
        }
        for nan in ["nan", "NaN", "-nan", "nan()", "nan(0x1_a)"] {
            assert!(strtod_all(nan).is_some_and(f64::is_nan), "{nan:?}");
        }
    }

    #[test]
    fn strtod_rejects_what_c_does_not_fully_consume() {
        for input in [
            "", " ", "abc", "1 ", "1e", "1e+", ".", "+-1", "--1", "0x", "0x.", "0xp1", "0x1p",
            "0x1g", "1,5", "nan(", "nan(a b)", "infinit", "1_000", "0x1.8p1 ",
        ] {
            assert_eq!(strtod_all(input), None, "strtod_all({input:?})");
        }
    }
}
