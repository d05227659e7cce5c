//! The `%Y%m%d%H%M%S` local-time stamp in the report file names, as
//! Python's `datetime.now().strftime(...)` writes it, without a date-time
//! dependency: the local UTC offset comes from the C library, the calendar
//! arithmetic is done here.

use std::time::{SystemTime, UNIX_EPOCH};

/// Seconds since the Unix epoch, now.
pub(super) fn now() -> i64 {
    match SystemTime::now().duration_since(UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
        Err(e) => -i64::try_from(e.duration().as_secs()).unwrap_or(i64::MAX),
    }
}

/// The local wall-clock time of `epoch_secs` as `YYYYmmddHHMMSS`.
pub(super) fn local_stamp(epoch_secs: i64) -> String {
    format_utc(epoch_secs.saturating_add(utc_offset(epoch_secs)))
}

/// Seconds east of UTC of the local time zone at `epoch_secs`.
#[cfg(unix)]
fn utc_offset(epoch_secs: i64) -> i64 {
    // time_t is 64-bit on every 64-bit unix; a 32-bit one wraps after 2038.
    let t = epoch_secs as libc::time_t;
    // SAFETY: `localtime_r` only writes the `tm` we own; a zeroed `tm` is a
    // valid value of this plain C struct.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    let ok = unsafe { !libc::localtime_r(&t, &mut tm).is_null() };
    if ok {
        #[allow(clippy::useless_conversion, reason = "c_long is 32-bit on some targets")]
        i64::from(tm.tm_gmtoff)
    } else {
        0
    }
}

/// Without a C library time zone database, the stamp is UTC.
#[cfg(not(unix))]
fn utc_offset(_epoch_secs: i64) -> i64 {
    0
}

/// `YYYYmmddHHMMSS` of a count of seconds since 1970-01-01 00:00:00.
fn format_utc(secs: i64) -> String {
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, d) = civil_from_days(days);
    format!("{y:04}{m:02}{d:02}{:02}{:02}{:02}", rem / 3600, rem % 3600 / 60, rem % 60)
}

/// Proleptic Gregorian date of a day count since 1970-01-01 (Howard Hinnant's
/// `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calendar_arithmetic() {
        assert_eq!(format_utc(0), "19700101000000");
        assert_eq!(format_utc(951_782_400 + 3_723), "20000229010203");
        assert_eq!(format_utc(1_735_689_599), "20241231235959");
        assert_eq!(format_utc(4_107_542_400), "21000301000000");
        assert_eq!(format_utc(-1), "19691231235959");
    }

    #[test]
    fn local_stamp_agrees_with_date() {
        let t = 1_700_000_000;
        assert!(utc_offset(t).abs() <= 14 * 3600);
        // Cross-check the C library path against date(1) where it exists.
        let date = std::process::Command::new("date").args(["-d", "@1700000000", "+%Y%m%d%H%M%S"]).output();
        if let Some(out) = date.ok().filter(|o| o.status.success()) {
            assert_eq!(local_stamp(t), String::from_utf8_lossy(&out.stdout).trim());
        }
    }
}
