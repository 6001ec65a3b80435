//! The SITES section (ASCII) and ALLOC SITES + HEAP SUMMARY records (binary):
//! ranking, percentages and cutoff as HPROF's hprof_site.c had them: sites by
//! live bytes, largest first, each with its share and the running total of
//! the live bytes, cut at the first one under the cutoff share. The ASCII
//! SITES block is followed by hprof-rs's SITES TOTALS, the totals the
//! binary record carries and what the cutoff left out.

use crate::format::ascii::{Section, SiteCounts, SiteRow, SitesSection, SitesTotals};
use crate::format::binary::{AllocSite, RecordBody};
use crate::format::commands::site_flags;
use crate::format::names::signature_to_name;
use crate::model::SiteStats;

/// One site as read at dump time.
#[derive(Debug, Clone, PartialEq)]
pub struct SiteSnapshot {
    pub class_serial: u32,
    pub trace_serial: u32,
    /// JVM signature of the allocated class.
    pub class_signature: String,
    pub stats: SiteStats,
}

/// Totals over all sites (before the cutoff).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SiteTotals {
    pub live_bytes: u64,
    pub live_objects: u64,
    pub allocated_bytes: u64,
    pub allocated_objects: u64,
}

/// A ranked row: the site and its percentages of the live total.
#[derive(Debug, Clone, PartialEq)]
pub struct RankedSite<'a> {
    pub rank: u64,
    pub self_percent: f64,
    pub accum_percent: f64,
    pub site: &'a SiteSnapshot,
}

/// Sums every site.
pub fn totals(sites: &[SiteSnapshot]) -> SiteTotals {
    sum(sites.iter())
}

/// Sums the given sites.
fn sum<'a>(sites: impl Iterator<Item = &'a SiteSnapshot>) -> SiteTotals {
    sites.fold(SiteTotals::default(), |t, s| SiteTotals {
        live_bytes: t.live_bytes + s.stats.live_bytes,
        live_objects: t.live_objects + s.stats.live_objects,
        allocated_bytes: t.allocated_bytes + s.stats.allocated_bytes,
        allocated_objects: t.allocated_objects + s.stats.allocated_objects,
    })
}

/// Sites ordered by live bytes (or allocated bytes), ties kept in creation
/// order, cut at the first site whose share of live bytes is below `cutoff`.
/// Percentages are of the live total, as HPROF printed them even when
/// ordering by allocated bytes. When nothing is live the shares are 0 and no
/// row is cut (HPROF printed `nan%` rows here).
pub fn rank(sites: &[SiteSnapshot], cutoff: f64, by_allocated: bool) -> Vec<RankedSite<'_>> {
    let mut order: Vec<&SiteSnapshot> = sites.iter().collect();
    let key = |s: &SiteSnapshot| {
        if by_allocated {
            s.stats.allocated_bytes
        } else {
            s.stats.live_bytes
        }
    };
    order.sort_by_key(|s| std::cmp::Reverse(key(s)));
    let total = totals(sites).live_bytes;
    let mut accum = 0.0;
    let mut rows = Vec::new();
    for (i, site) in order.into_iter().enumerate() {
        let ratio = if total == 0 {
            0.0
        } else {
            site.stats.live_bytes as f64 / total as f64
        };
        if total != 0 && ratio < cutoff {
            break;
        }
        accum += ratio;
        rows.push(RankedSite {
            rank: i as u64 + 1,
            self_percent: ratio * 100.0,
            accum_percent: accum * 100.0,
            site,
        });
    }
    rows
}

/// Whether the ALLOC SITES `flags` (HPROF's, sent by a `net=` front end)
/// ask for the order by allocated bytes.
fn by_allocated(flags: u16) -> bool {
    flags & site_flags::BY_ALLOCATED != 0
}

/// The ASCII SITES section, then SITES TOTALS; `flags` are those of ALLOC
/// SITES (0 for a dump).
pub fn ascii_sections(
    sites: &[SiteSnapshot],
    cutoff: f64,
    flags: u16,
    created: String,
) -> [Section; 2] {
    let ranked = rank(sites, cutoff, by_allocated(flags));
    let all = totals(sites);
    let listed = sum(ranked.iter().map(|r| r.site));
    let totals = SitesTotals {
        all: counts(sites.len(), all),
        below_cutoff: counts(sites.len() - ranked.len(), difference(all, listed)),
    };
    let rows = ranked
        .into_iter()
        .map(|r| SiteRow {
            rank: r.rank,
            self_percent: r.self_percent,
            accum_percent: r.accum_percent,
            live_bytes: r.site.stats.live_bytes,
            live_objects: r.site.stats.live_objects,
            allocated_bytes: r.site.stats.allocated_bytes,
            allocated_objects: r.site.stats.allocated_objects,
            trace_serial: r.site.trace_serial,
            class_name: signature_to_name(&r.site.class_signature),
        })
        .collect();
    let section = SitesSection {
        ordered_by: if by_allocated(flags) {
            "allocated bytes"
        } else {
            "live bytes"
        }
        .into(),
        created,
        rows,
    };
    [Section::Sites(section), Section::SitesTotals(totals)]
}

/// `whole` less `part` (a subset of its sites), column by column.
fn difference(whole: SiteTotals, part: SiteTotals) -> SiteTotals {
    SiteTotals {
        live_bytes: whole.live_bytes - part.live_bytes,
        live_objects: whole.live_objects - part.live_objects,
        allocated_bytes: whole.allocated_bytes - part.allocated_bytes,
        allocated_objects: whole.allocated_objects - part.allocated_objects,
    }
}

/// The SITES TOTALS row of `rows` sites summing to `t`.
fn counts(rows: usize, t: SiteTotals) -> SiteCounts {
    SiteCounts {
        rows: rows as u64,
        live_bytes: t.live_bytes,
        live_objects: t.live_objects,
        allocated_bytes: t.allocated_bytes,
        allocated_objects: t.allocated_objects,
    }
}

/// A 64-bit count in a 32-bit field: saturated, never wrapped.
fn u32_saturated(value: u64) -> u32 {
    u32::try_from(value).unwrap_or(u32::MAX)
}

/// The array type byte of ALLOC SITES: 0 not an array, 2 object array,
/// 4..=11 primitive array.
pub fn array_type(signature: &str) -> u8 {
    match signature.as_bytes() {
        [b'[', b'L' | b'[', ..] => 2,
        [b'[', b'Z'] => 4,
        [b'[', b'C'] => 5,
        [b'[', b'F'] => 6,
        [b'[', b'D'] => 7,
        [b'[', b'B'] => 8,
        [b'[', b'S'] => 9,
        [b'[', b'I'] => 10,
        [b'[', b'J'] => 11,
        _ => 0,
    }
}

/// The binary ALLOC SITES record, then HEAP SUMMARY with the same totals.
/// The cutoff field holds the IEEE single-precision bits of the cutoff (HPROF
/// wrote half of a double's bits there). `flags` are those of ALLOC SITES
/// (0 for a dump), written into the record as HPROF did.
pub fn binary_records(sites: &[SiteSnapshot], cutoff: f64, flags: u16) -> [RecordBody; 2] {
    let t = totals(sites);
    let rows = rank(sites, cutoff, by_allocated(flags))
        .into_iter()
        .map(|r| AllocSite {
            array_type: array_type(&r.site.class_signature),
            class_serial: r.site.class_serial,
            trace_serial: r.site.trace_serial,
            live_bytes: u32_saturated(r.site.stats.live_bytes),
            live_instances: u32_saturated(r.site.stats.live_objects),
            allocated_bytes: u32_saturated(r.site.stats.allocated_bytes),
            allocated_instances: u32_saturated(r.site.stats.allocated_objects),
        })
        .collect();
    [
        RecordBody::AllocSites {
            flags,
            cutoff: (cutoff as f32).to_bits(),
            total_live_bytes: u32_saturated(t.live_bytes),
            total_live_instances: u32_saturated(t.live_objects),
            total_allocated_bytes: t.allocated_bytes,
            total_allocated_instances: t.allocated_objects,
            sites: rows,
        },
        heap_summary_record(sites),
    ]
}

/// The HEAP SUMMARY record: the totals of every site.
pub fn heap_summary_record(sites: &[SiteSnapshot]) -> RecordBody {
    let t = totals(sites);
    RecordBody::HeapSummary {
        live_bytes: u32_saturated(t.live_bytes),
        live_instances: u32_saturated(t.live_objects),
        allocated_bytes: t.allocated_bytes,
        allocated_instances: t.allocated_objects,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn site(trace: u32, live: u64, allocated: u64) -> SiteSnapshot {
        SiteSnapshot {
            class_serial: 100_000,
            trace_serial: trace,
            class_signature: "[I".into(),
            stats: SiteStats {
                live_bytes: live,
                live_objects: 1,
                allocated_bytes: allocated,
                allocated_objects: 1,
            },
        }
    }

    #[test]
    fn ranks_by_live_bytes_with_stable_ties_and_cutoff() {
        let sites = [
            site(1, 100, 100),
            site(2, 700, 800),
            site(3, 100, 900),
            site(4, 0, 50),
            site(5, 100, 100),
        ];
        let rows = rank(&sites, 0.0001, false);
        let traces: Vec<u32> = rows.iter().map(|r| r.site.trace_serial).collect();
        assert_eq!(
            traces,
            vec![2, 1, 3, 5],
            "ties keep creation order; the 0-byte site is cut"
        );
        assert!((rows[0].self_percent - 70.0).abs() < 1e-9);
        assert!((rows[3].accum_percent - 100.0).abs() < 1e-9);
        assert_eq!(rows.len(), 4);
        assert_eq!(
            rank(&sites, 0.0, false).len(),
            5,
            "cutoff=0 keeps every site"
        );
        assert_eq!(rank(&sites, 0.2, false).len(), 1);
        let by_allocated: Vec<u32> = rank(&sites, 0.0, true)
            .iter()
            .map(|r| r.site.trace_serial)
            .collect();
        assert_eq!(by_allocated, vec![3, 2, 1, 5, 4]);
    }

    #[test]
    fn sites_totals_hold_every_site_and_what_the_cutoff_left_out() {
        let sites =
            [(1, 100, 100), (2, 700, 800), (3, 0, 900), (4, 0, 50)].map(|(t, l, a)| site(t, l, a));
        let [Section::Sites(listed), Section::SitesTotals(totals)] =
            ascii_sections(&sites, 0.0001, 0, "now".into())
        else {
            panic!("SITES then SITES TOTALS")
        };
        assert_eq!(listed.rows.len(), 2);
        let counts =
            |rows, live_bytes, live_objects, allocated_bytes, allocated_objects| SiteCounts {
                rows,
                live_bytes,
                live_objects,
                allocated_bytes,
                allocated_objects,
            };
        assert_eq!(totals.all, counts(4, 800, 4, 1850, 4));
        assert_eq!(totals.below_cutoff, counts(2, 0, 2, 950, 2));
        let [_, Section::SitesTotals(uncut)] = ascii_sections(&sites, 0.0, 0, "now".into()) else {
            panic!("SITES then SITES TOTALS")
        };
        assert_eq!(uncut.below_cutoff, SiteCounts::default());
        assert_eq!(uncut.all, totals.all);
    }

    #[test]
    fn nothing_live_prints_every_site_at_zero_percent() {
        let sites = [site(1, 0, 10), site(2, 0, 20)];
        let rows = rank(&sites, 0.0001, false);
        assert_eq!(rows.len(), 2);
        assert!(rows.iter().all(|r| r.self_percent == 0.0));
    }

    #[test]
    fn binary_counts_saturate_and_array_types_follow_the_signature() {
        let big = site(1, 5_000_000_000, 6_000_000_000);
        let [
            RecordBody::AllocSites {
                sites,
                total_allocated_bytes,
                cutoff,
                ..
            },
            RecordBody::HeapSummary { live_bytes, .. },
        ] = binary_records(&[big], 0.0001, 0)
        else {
            panic!("unexpected records")
        };
        assert_eq!(sites[0].live_bytes, u32::MAX);
        assert_eq!(total_allocated_bytes, 6_000_000_000);
        assert_eq!(live_bytes, u32::MAX);
        assert_eq!(f32::from_bits(cutoff), 0.0001f32);
        assert_eq!(array_type("[I"), 10);
        assert_eq!(array_type("[[I"), 2);
        assert_eq!(array_type("[Ljava/lang/String;"), 2);
        assert_eq!(array_type("Ljava/lang/String;"), 0);
        assert_eq!(array_type("[Z"), 4);
    }
}
