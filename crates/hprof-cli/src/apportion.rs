//! Sharing a table's total out over its rows. CPU TIME, MONITOR TIME and
//! LOCK TIME print each row's time only as a percentage of the table's
//! total with two decimals; rounding each row on its own would make the
//! rows add up to a little more or less than the total the file states.
//! The largest-remainder method gives every row its share rounded down,
//! then one more unit to the rows that lost the most, so the rows sum to
//! the total exactly and no row is off by more than one unit.

/// Shares `total` out in proportion to `shares` (percentages as printed);
/// when every share is 0 (each row below 0.005%), in proportion to
/// `counts`. Rows with nothing to weigh them by get nothing; if no row has
/// a weight at all, nothing is shared (every row 0).
pub fn apportion(total: u64, shares: &[f64], counts: &[u64]) -> Vec<u64> {
    let usable = |w: &f64| w.is_finite() && *w > 0.0;
    let mut weights: Vec<f64> = shares
        .iter()
        .map(|w| if usable(w) { *w } else { 0.0 })
        .collect();
    if weights.iter().all(|w| *w == 0.0) {
        weights = counts.iter().map(|&c| c as f64).collect();
    }
    let sum: f64 = weights.iter().sum();
    if !(sum > 0.0 && sum.is_finite()) {
        return vec![0; weights.len()];
    }
    let exact: Vec<f64> = weights.iter().map(|w| w / sum * total as f64).collect();
    // `as` saturates: a damaged file's huge total cannot wrap.
    let mut parts: Vec<u64> = exact.iter().map(|e| e.floor() as u64).collect();
    let given = parts.iter().fold(0u64, |a, &p| a.saturating_add(p));
    let mut left = total.saturating_sub(given);
    let mut by_remainder: Vec<usize> = (0..parts.len()).filter(|&i| weights[i] > 0.0).collect();
    by_remainder.sort_by(|&a, &b| {
        let remainder = |i: usize| exact[i] - exact[i].floor();
        remainder(b).total_cmp(&remainder(a)).then(a.cmp(&b))
    });
    // Floating point may leave more than one unit per row to give (huge
    // totals): go round again until none is left.
    while left > 0 && !by_remainder.is_empty() {
        for &i in &by_remainder {
            if left == 0 {
                break;
            }
            parts[i] = parts[i].saturating_add(1);
            left -= 1;
        }
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_sum_to_the_total_where_rounding_each_would_not() {
        // Three rows of 33.33%: rounding each gives 3 x 33 = 99 of 100.
        let parts = apportion(100, &[33.33, 33.33, 33.33], &[1, 1, 1]);
        assert_eq!(parts, [34, 33, 33]);
        let parts = apportion(1234, &[50.0, 25.0, 24.99, 0.01], &[9, 9, 9, 9]);
        assert_eq!(parts.iter().sum::<u64>(), 1234);
        assert_eq!(parts, [617, 309, 308, 0]);
    }

    #[test]
    fn counts_weigh_the_rows_when_every_share_is_zero() {
        assert_eq!(apportion(10, &[0.0, 0.0], &[3, 1]), [8, 2]);
        assert_eq!(apportion(10, &[0.0], &[0]), [0]);
        assert_eq!(apportion(0, &[], &[]), Vec::<u64>::new());
    }

    #[test]
    fn damaged_numbers_do_not_panic_and_still_sum() {
        let parts = apportion(u64::MAX, &[f64::NAN, 1.0, f64::INFINITY, 2.0], &[0; 4]);
        assert_eq!(
            parts.iter().fold(0u64, |a, &p| a.saturating_add(p)),
            u64::MAX
        );
    }
}
