//! Parsing ASCII files back into [`Section`]s.
//!
//! Accepts `\n` and `\r\n` line ends (Windows files were written in text
//! mode) and keeps every time stamp verbatim, so Windows' zero-padded days
//! (`Thu Nov 02 17:11:21 2017`) parse like glibc's space-padded ones.
//! Column widths are not checked: numbers that outgrew their column still parse.
//! Errors carry the byte offset of the line at fault; a block without its END
//! line is reported at its BEGIN line.
use super::scan::{Line, Lines, columns, dec, hex, percent, scan};
use super::sections::*;
use super::writer::{
    CPU_TITLES, LOCK_TIME_TITLES, MONITOR_HOLDERS_TITLES, MONITOR_TIME_TITLES, OLD_PROF_TITLES,
    SITES_TITLES, SITES_TOTALS_LABELS, SITES_TOTALS_TITLES, WALL_STATES_TITLES,
};
use crate::ParseError;

/// Parse a whole ASCII profile into its sections, in file order.
///
/// Blank lines between sections are skipped.
pub fn parse(text: &[u8]) -> Result<Vec<Section>, ParseError> {
    let mut lines = Lines::new(text);
    let mut sections = Vec::new();
    while let Some(line) = lines.next() {
        if !line.text.is_empty() {
            sections.push(parse_section(&line, &mut lines)?);
        }
    }
    Ok(sections)
}

/// Parse a whole `java.hprof.txt` file. Unlike [`parse`], which also reads
/// fragments, this requires the file to start with its
/// `JAVA PROFILE 1.0.x, created <date>` line: an empty file or one without
/// that header line is not a profile.
pub fn parse_file(text: &[u8]) -> Result<Vec<Section>, ParseError> {
    let Some(first) = Lines::new(text).next() else {
        return Err(ParseError {
            offset: 0,
            message: "empty file: an ASCII profile starts with a `JAVA PROFILE 1.0.x, created <date>` line".into(),
        });
    };
    if !is_first_line(&first.text) {
        return Err(fault(
            &first,
            "the file does not start with a `JAVA PROFILE 1.0.x, created <date>` line \
             (or, for cpu=old, `count callee caller time`)",
        ));
    }
    parse(text)
}

/// Whether `text` (without its line end) can be the first line of a whole
/// ASCII profile: the header line, or the old table's title, since a cpu=old
/// file is only the old "prof" table, with no header (HPROF's rule).
pub(crate) fn is_first_line(text: &str) -> bool {
    is_header_line(text) || text == super::writer::OLD_PROF_TITLES
}

/// `JAVA PROFILE 1.0.<digits>, created <date>`.
fn is_header_line(text: &str) -> bool {
    let Some([version, _]) = scan(text, "{}, created {}") else {
        return false;
    };
    version
        .strip_prefix("JAVA PROFILE 1.0.")
        .is_some_and(|minor| !minor.is_empty() && minor.bytes().all(|b| b.is_ascii_digit()))
}

type SectionParser = fn(&Line, &mut Lines) -> Result<Section, ParseError>;

/// Which parser handles a section, by the start of its first line.
const PARSERS: [(&str, SectionParser); 16] = [
    ("JAVA PROFILE ", parse_header),
    ("THREAD START ", parse_thread_start),
    ("THREAD END ", parse_thread_end),
    ("TRACE ", parse_trace),
    ("SITES BEGIN ", parse_sites),
    ("SITES TOTALS BEGIN", parse_sites_totals),
    ("CPU SAMPLES BEGIN ", parse_cpu),
    ("CPU TIME (ms) BEGIN ", parse_cpu),
    ("WALL STATES BEGIN", parse_wall_states),
    ("LOCK TIME BEGIN ", parse_lock_time),
    (OLD_PROF_TITLES, parse_old_prof),
    ("WAIT: ", parse_wait),
    ("WAITED: ", parse_waited),
    ("MONITOR DUMP BEGIN", parse_monitor_dump),
    ("MONITOR TIME BEGIN ", parse_monitor_time),
    ("MONITOR HOLDERS BEGIN", parse_monitor_holders),
];

fn parse_section(line: &Line, lines: &mut Lines) -> Result<Section, ParseError> {
    if line.text.starts_with("HEAP DUMP BEGIN ") {
        return parse_heap_dump(line, lines);
    }
    if let Some((_, parser)) = PARSERS
        .iter()
        .find(|(prefix, _)| line.text.starts_with(prefix))
    {
        return parser(line, lines);
    }
    let message = if line.text.starts_with('\t') {
        "indented line (e.g. a TRACE frame line) without a header line before it"
    } else {
        "unknown line outside any block"
    };
    Err(fault(line, message))
}

fn fault(line: &Line, what: &str) -> ParseError {
    const SHOWN: usize = 80;
    let excerpt: String = line.text.chars().take(SHOWN).collect();
    ParseError {
        offset: line.offset,
        message: format!("{what}: {excerpt:?}"),
    }
}

/// Turns a failed line parse into an error at that line.
trait OrMalformed<T> {
    fn or_malformed(self, line: &Line, what: &str) -> Result<T, ParseError>;
}

impl<T> OrMalformed<T> for Option<T> {
    fn or_malformed(self, line: &Line, what: &str) -> Result<T, ParseError> {
        self.ok_or_else(|| fault(line, &format!("malformed {what}")))
    }
}

/// The lines after `begin` up to (not including) the line `end`.
fn block_body<'a>(
    begin: &Line,
    lines: &mut Lines<'a>,
    end: &str,
) -> Result<Vec<Line<'a>>, ParseError> {
    let mut body = Vec::new();
    for line in lines.by_ref() {
        if line.text == end {
            return Ok(body);
        }
        body.push(line);
    }
    Err(fault(
        begin,
        &format!("no `{end}` line before the end of the file for the block starting"),
    ))
}

/// The rows of a block whose optional first line is `titles`.
fn without_titles<'b, 'a>(body: &'b [Line<'a>], titles: &str) -> &'b [Line<'a>] {
    match body.first() {
        Some(first) if first.text == titles => &body[1..],
        _ => body,
    }
}

fn parse_rows<T>(
    rows: &[Line],
    what: &str,
    row: impl Fn(&str) -> Option<T>,
) -> Result<Vec<T>, ParseError> {
    rows.iter()
        .map(|line| row(&line.text).or_malformed(line, what))
        .collect()
}

fn parse_header(first: &Line, lines: &mut Lines) -> Result<Section, ParseError> {
    let [version, created] =
        scan(&first.text, "{}, created {}").or_malformed(first, "file header line")?;
    match lines.next() {
        Some(line) if line.text.is_empty() => {}
        Some(line) => {
            return Err(fault(
                &line,
                "expected an empty line after the file header line",
            ));
        }
        None => return Err(fault(first, "file header without a `--------` line")),
    }
    let prelude = block_body(first, lines, "--------")?;
    lines.next_if(str::is_empty);
    // The writer puts one `\n` between the prelude and `--------`, so the
    // prelude is exactly the lines in between joined by `\n`.
    let prelude: Vec<&str> = prelude.iter().map(|line| &*line.text).collect();
    Ok(Section::Header {
        version: version.to_string(),
        created: created.to_string(),
        prelude: prelude.join("\n"),
    })
}

fn parse_thread_start(line: &Line, _: &mut Lines) -> Result<Section, ParseError> {
    let pattern = "THREAD START (obj={}, id = {}, name=\"{}\", group=\"{}\")";
    let thread_start = |text: &str| {
        let [obj, id, name, group] = scan(text, pattern)?;
        Some(Section::ThreadStart {
            object_id: hex(obj)?,
            thread_serial: dec(id)?,
            name: name.to_string(),
            group: group.to_string(),
        })
    };
    thread_start(&line.text).or_malformed(line, "THREAD START line")
}

fn parse_thread_end(line: &Line, _: &mut Lines) -> Result<Section, ParseError> {
    let thread_end = |text: &str| {
        let [id] = scan(text, "THREAD END (id = {})")?;
        Some(Section::ThreadEnd {
            thread_serial: dec(id)?,
        })
    };
    thread_end(&line.text).or_malformed(line, "THREAD END line")
}

fn parse_trace(head: &Line, lines: &mut Lines) -> Result<Section, ParseError> {
    let mut trace = trace_header(&head.text).or_malformed(head, "TRACE line")?;
    while let Some(line) = lines.next_if(|text| text.starts_with('\t')) {
        if line.text != "\t<empty>" {
            trace
                .frames
                .push(trace_frame(&line.text[1..]).or_malformed(&line, "TRACE frame line")?);
        }
    }
    Ok(Section::Trace(trace))
}

/// `TRACE %u:` [` (thread=%d)`] [` (from %s phase of JVM)`]
fn trace_header(text: &str) -> Option<TraceSection> {
    let (serial, mut rest) = text.strip_prefix("TRACE ")?.split_once(':')?;
    let mut thread_serial = None;
    if let Some(after) = rest.strip_prefix(" (thread=") {
        let (thread, after) = after.split_once(')')?;
        thread_serial = Some(dec(thread)?);
        rest = after;
    }
    let phase = match rest {
        "" => None,
        _ => Some(scan::<1>(rest, " (from {} phase of JVM)")?[0].to_string()),
    };
    Some(TraceSection {
        serial: dec(serial)?,
        thread_serial,
        phase,
        frames: Vec::new(),
    })
}

/// `<class>.<method>(<source>:<line>)`, the leading tab already removed.
fn trace_frame(text: &str) -> Option<TraceFrame> {
    // The line part never holds a `:`; a source file name may.
    let (head, line) = text.strip_suffix(')')?.rsplit_once(':')?;
    let open = source_open(head)?;
    let (class_name, method_name) = head[..open].rsplit_once('.')?;
    let line = match line {
        "Unknown line" => LineInfo::Unknown,
        "Compiled method" => LineInfo::Compiled,
        "Native method" => LineInfo::Native,
        number => LineInfo::Line(dec(number)?),
    };
    Some(TraceFrame {
        class_name: class_name.to_string(),
        method_name: method_name.to_string(),
        source_file: head[open + 1..].to_string(),
        line,
    })
}

/// Where the `(` before the source file is in `<class>.<method>(<source>`.
///
/// The JVM allows `(`, `)` and `:` in class and method names (it forbids
/// only `.`, `;`, `[` and `/` in a method's name), and a source file may be
/// named anything, so the first `(` is not always the one: a class renamed
/// `H(1)T` gives `H(1)T.run(H(1)T.java`. The `(` chosen is one with a `.`
/// before it (between a class and a method, neither empty) that leaves the
/// class, the method and the source each with balanced parentheses;
/// failing that, one whose method name has no parenthesis; failing that,
/// the first.
fn source_open(head: &str) -> Option<usize> {
    let split = |(open, _): (usize, &str)| {
        let (class_name, method_name) = head[..open].rsplit_once('.')?;
        // The JVM allows no empty name.
        if class_name.is_empty() || method_name.is_empty() {
            return None;
        }
        Some((open, [class_name, method_name, &head[open + 1..]]))
    };
    let candidates = || head.match_indices('(').filter_map(split);
    candidates()
        .find(|(_, pieces)| pieces.iter().all(|piece| balanced(piece)))
        .or_else(|| candidates().find(|(_, [_, method, _])| !method.contains(['(', ')'])))
        .or_else(|| candidates().next())
        .map(|(open, _)| open)
}

/// Whether every `)` of `text` closes a `(` before it, and every `(` is closed.
fn balanced(text: &str) -> bool {
    let mut depth = 0usize;
    for c in text.chars() {
        match c {
            '(' => depth += 1,
            ')' => match depth.checked_sub(1) {
                Some(d) => depth = d,
                None => return false,
            },
            _ => {}
        }
    }
    depth == 0
}

fn parse_sites(begin: &Line, lines: &mut Lines) -> Result<Section, ParseError> {
    let [ordered_by, created] = scan(&begin.text, "SITES BEGIN (ordered by {}) {}")
        .or_malformed(begin, "SITES BEGIN line")?;
    let body = block_body(begin, lines, "SITES END")?;
    for (i, title) in SITES_TITLES.iter().enumerate() {
        let line = body
            .get(i)
            .ok_or_else(|| fault(begin, "SITES block without its column titles"))?;
        if line.text != *title {
            return Err(fault(line, "expected the SITES column titles"));
        }
    }
    let rows = parse_rows(&body[SITES_TITLES.len()..], "SITES row", site_row)?;
    Ok(Section::Sites(SitesSection {
        ordered_by: ordered_by.to_string(),
        created: created.to_string(),
        rows,
    }))
}

/// `%5u %5.2f%% %5.2f%% %9u %4u %9u %5u %5u %s`
fn site_row(text: &str) -> Option<SiteRow> {
    let (
        [
            rank,
            self_pct,
            accum,
            live_bytes,
            live_objs,
            alloc_bytes,
            alloc_objs,
            trace,
        ],
        name,
    ) = columns(text)?;
    Some(SiteRow {
        rank: dec(rank)?,
        self_percent: percent(self_pct)?,
        accum_percent: percent(accum)?,
        live_bytes: dec(live_bytes)?,
        live_objects: dec(live_objs)?,
        allocated_bytes: dec(alloc_bytes)?,
        allocated_objects: dec(alloc_objs)?,
        trace_serial: dec(trace)?,
        class_name: name.to_string(),
    })
}

fn parse_sites_totals(begin: &Line, lines: &mut Lines) -> Result<Section, ParseError> {
    if begin.text != "SITES TOTALS BEGIN" {
        return Err(fault(begin, "malformed SITES TOTALS BEGIN line"));
    }
    let body = block_body(begin, lines, "SITES TOTALS END")?;
    let [titles, all, below_cutoff] = &body[..] else {
        return Err(fault(
            begin,
            "expected the SITES TOTALS column titles and two rows in the block starting",
        ));
    };
    if titles.text != SITES_TOTALS_TITLES {
        return Err(fault(titles, "expected the SITES TOTALS column titles"));
    }
    let row = |line: &Line, label: &str| {
        site_counts(&line.text, label).or_malformed(line, &format!("SITES TOTALS `{label}` row"))
    };
    Ok(Section::SitesTotals(SitesTotals {
        all: row(all, SITES_TOTALS_LABELS[0])?,
        below_cutoff: row(below_cutoff, SITES_TOTALS_LABELS[1])?,
    }))
}

/// `<label> live-bytes live-objs alloc'ed-bytes alloc'ed-objs rows`.
fn site_counts(text: &str, label: &str) -> Option<SiteCounts> {
    let rest = text.strip_prefix(label)?;
    let (
        [
            live_bytes,
            live_objects,
            allocated_bytes,
            allocated_objects,
            rows,
        ],
        "",
    ) = columns(rest)?
    else {
        return None;
    };
    Some(SiteCounts {
        rows: dec(rows)?,
        live_bytes: dec(live_bytes)?,
        live_objects: dec(live_objects)?,
        allocated_bytes: dec(allocated_bytes)?,
        allocated_objects: dec(allocated_objects)?,
    })
}

/// The leading columns of a CPU or MONITOR TIME row, and the text after them.
fn rank_columns(text: &str) -> Option<(RankColumns, &str)> {
    let ([rank, self_pct, accum, count, trace], rest) = columns(text)?;
    let cols = RankColumns {
        rank: dec(rank)?,
        self_percent: percent(self_pct)?,
        accum_percent: percent(accum)?,
        count: dec(count)?,
        trace_serial: dec(trace)?,
    };
    Some((cols, rest))
}

fn parse_cpu(begin: &Line, lines: &mut Lines) -> Result<Section, ParseError> {
    let (title, kind, total, created) =
        cpu_header(&begin.text).or_malformed(begin, "CPU BEGIN line")?;
    let body = block_body(begin, lines, &format!("{title} END"))?;
    let rows = parse_rows(without_titles(&body, CPU_TITLES), "CPU row", cpu_row)?;
    Ok(Section::Cpu(CpuSection {
        title: kind,
        total,
        created: created.to_string(),
        rows,
    }))
}

fn parse_wall_states(begin: &Line, lines: &mut Lines) -> Result<Section, ParseError> {
    if begin.text != "WALL STATES BEGIN" {
        return Err(fault(begin, "malformed WALL STATES BEGIN line"));
    }
    let body = block_body(begin, lines, "WALL STATES END")?;
    let rows = parse_rows(
        without_titles(&body, WALL_STATES_TITLES),
        "WALL STATES row",
        crate::wall_states::row_of,
    )?;
    Ok(Section::WallStates(rows))
}

/// `%s BEGIN (total = %d) %s`: the printed title, its kind, the total and the time stamp.
fn cpu_header(text: &str) -> Option<(&str, CpuTitle, u64, &str)> {
    let [title, total, created] = scan(text, "{} BEGIN (total = {}) {}")?;
    let kind = match title {
        "CPU SAMPLES" => CpuTitle::Samples,
        "CPU TIME (ms)" => CpuTitle::TimeMs,
        _ => return None,
    };
    Some((title, kind, dec(total)?, created))
}

fn cpu_row(text: &str) -> Option<CpuRow> {
    let (cols, method) = rank_columns(text)?;
    let method = (method != "<empty trace>").then(|| method.to_string());
    Some(CpuRow::from_columns(cols, method))
}

/// The `cpu=old` table has no end line: its rows are the lines that start
/// with a number.
fn parse_old_prof(titles: &Line, lines: &mut Lines) -> Result<Section, ParseError> {
    if titles.text != OLD_PROF_TITLES {
        return Err(fault(titles, "malformed cpu=old title line"));
    }
    let mut rows = Vec::new();
    let starts_with_number =
        |text: &str| text.starts_with(|c: char| c.is_ascii_digit() || c == '-');
    while let Some(line) = lines.next_if(starts_with_number) {
        rows.push(old_prof_row(&line.text).or_malformed(&line, "cpu=old row")?);
    }
    Ok(Section::OldProf(rows))
}

/// `%d <callee> <caller> %d`, where an unknown frame is `<unknown callee>` / `<unknown caller>`.
fn old_prof_row(text: &str) -> Option<OldProfRow> {
    let (count, rest) = text.split_once(' ')?;
    let (callee, rest) = old_prof_frame(rest, "<unknown callee> ")?;
    let (caller, time) = old_prof_frame(rest, "<unknown caller> ")?;
    Some(OldProfRow {
        count: dec(count)?,
        callee,
        caller,
        time: dec(time)?,
    })
}

fn old_prof_frame<'t>(text: &'t str, unknown: &str) -> Option<(Option<String>, &'t str)> {
    if let Some(rest) = text.strip_prefix(unknown) {
        return Some((None, rest));
    }
    let (frame, rest) = text.split_once(' ')?;
    Some((Some(frame.to_string()), rest))
}

/// `thread N`, or `<unknown thread>` (serial 0).
fn thread_ref(text: &str) -> Option<u32> {
    match text {
        "<unknown thread>" => Some(0),
        _ => dec(text.strip_prefix("thread ")?),
    }
}

fn parse_wait(line: &Line, _: &mut Lines) -> Result<Section, ParseError> {
    let wait = |text: &str| {
        let [signature, timeout, thread] = scan(text, "WAIT: MONITOR {}, timeout={}, {}")?;
        Some(Section::MonitorWait {
            signature: signature.to_string(),
            timeout_ms: dec(timeout)?,
            thread_serial: thread_ref(thread)?,
        })
    };
    wait(&line.text).or_malformed(line, "WAIT line")
}

fn parse_waited(line: &Line, _: &mut Lines) -> Result<Section, ParseError> {
    let waited = |text: &str| {
        let [signature, waited, thread] = scan(text, "WAITED: MONITOR {}, time_waited={}, {}")?;
        Some(Section::MonitorWaited {
            signature: signature.to_string(),
            waited_ms: dec(waited)?,
            thread_serial: thread_ref(thread)?,
        })
    };
    waited(&line.text).or_malformed(line, "WAITED line")
}

fn parse_monitor_dump(begin: &Line, lines: &mut Lines) -> Result<Section, ParseError> {
    if begin.text != "MONITOR DUMP BEGIN" {
        return Err(fault(begin, "malformed MONITOR DUMP BEGIN line"));
    }
    let body = block_body(begin, lines, "MONITOR DUMP END")?;
    let mut body = body.iter().peekable();
    let mut threads = Vec::new();
    while let Some(line) = body.next_if(|line| line.text.starts_with("    THREAD ")) {
        threads.push(monitor_thread(&line.text).or_malformed(line, "MONITOR DUMP thread line")?);
    }
    let mut monitors = Vec::new();
    while let Some(head) = body.next() {
        monitors.push(monitor_info(head, &mut body)?);
    }
    Ok(Section::MonitorDump { threads, monitors })
}

fn monitor_thread(text: &str) -> Option<MonitorThread> {
    let [thread, trace, status] = scan(text, "    THREAD {}, trace {}, status: {}")?;
    Some(MonitorThread {
        thread_serial: dec(thread)?,
        trace_serial: dec(trace)?,
        status: status.to_string(),
    })
}

/// A `    MONITOR` line and the lines that belong to it.
fn monitor_info<'l, 'a: 'l>(
    head: &Line,
    body: &mut impl Iterator<Item = &'l Line<'a>>,
) -> Result<MonitorInfo, ParseError> {
    let mut next = || {
        body.next()
            .ok_or_else(|| fault(head, "MONITOR entry cut short by MONITOR DUMP END"))
    };
    let signature = head
        .text
        .strip_prefix("    MONITOR ")
        .or_malformed(head, "MONITOR DUMP line")?;
    let (signature, owner_thread_serial, entry_count) = match signature.strip_suffix(" unowned") {
        Some(signature) => (signature, 0, 0),
        None => {
            let line = next()?;
            let owner = |text: &str| {
                let [owner, count] = scan(text, "\towner: thread {}, entry count: {}")?;
                Some((dec(owner)?, dec(count)?))
            };
            let (owner, count) = owner(&line.text).or_malformed(line, "MONITOR owner line")?;
            (signature, owner, count)
        }
    };
    let line = next()?;
    let waiting_to_enter =
        waiters(&line.text, "\twaiting to enter:").or_malformed(line, "waiting to enter line")?;
    let line = next()?;
    let waiting_to_be_notified = waiters(&line.text, "\twaiting to be notified:")
        .or_malformed(line, "waiting to be notified line")?;
    Ok(MonitorInfo {
        signature: signature.to_string(),
        owner_thread_serial,
        entry_count,
        waiting_to_enter,
        waiting_to_be_notified,
    })
}

/// `<label> thread 1, thread 2` (a comma after every waiter but the last).
fn waiters(text: &str, label: &str) -> Option<Vec<u32>> {
    let list = text.strip_prefix(label)?;
    if list.is_empty() {
        return Some(Vec::new());
    }
    list.split(',')
        .map(|item| thread_ref(item.strip_prefix(' ')?))
        .collect()
}

fn parse_monitor_time(begin: &Line, lines: &mut Lines) -> Result<Section, ParseError> {
    let (total_ms, created, rows) =
        parse_contention_time(begin, lines, "MONITOR TIME", MONITOR_TIME_TITLES)?;
    Ok(Section::MonitorTime {
        total_ms,
        created,
        rows,
    })
}

fn parse_lock_time(begin: &Line, lines: &mut Lines) -> Result<Section, ParseError> {
    let (total_ms, created, rows) =
        parse_contention_time(begin, lines, "LOCK TIME", LOCK_TIME_TITLES)?;
    Ok(Section::LockTime {
        total_ms,
        created,
        rows,
    })
}

/// A block of MONITOR TIME's layout named `name` (MONITOR TIME or LOCK
/// TIME): its total, its time stamp and its rows.
fn parse_contention_time(
    begin: &Line,
    lines: &mut Lines,
    name: &str,
    titles: &str,
) -> Result<(u64, String, Vec<MonitorTimeRow>), ParseError> {
    let begin_line = format!("{name} BEGIN line");
    let [total, created] = scan(&begin.text, &format!("{name} BEGIN (total = {{}} ms) {{}}"))
        .or_malformed(begin, &begin_line)?;
    let total_ms = dec(total).or_malformed(begin, &begin_line)?;
    let body = block_body(begin, lines, &format!("{name} END"))?;
    let rows = parse_rows(
        without_titles(&body, titles),
        &format!("{name} row"),
        monitor_time_row,
    )?;
    Ok((total_ms, created.to_string(), rows))
}

fn monitor_time_row(text: &str) -> Option<MonitorTimeRow> {
    let (cols, monitor) = rank_columns(text)?;
    Some(MonitorTimeRow::from_columns(
        cols,
        monitor.strip_suffix(" (Java)")?.to_string(),
    ))
}

fn parse_monitor_holders(begin: &Line, lines: &mut Lines) -> Result<Section, ParseError> {
    if begin.text != "MONITOR HOLDERS BEGIN" {
        return Err(fault(begin, "malformed MONITOR HOLDERS BEGIN line"));
    }
    let body = block_body(begin, lines, "MONITOR HOLDERS END")?;
    let rows = parse_rows(
        without_titles(&body, MONITOR_HOLDERS_TITLES),
        "MONITOR HOLDERS row",
        monitor_holder_row,
    )?;
    Ok(Section::MonitorHolders(rows))
}

/// `rank trace holder seen/sampled <class> (Java)`.
fn monitor_holder_row(text: &str) -> Option<MonitorHolderRow> {
    let ([rank, trace, holder, seen], monitor) = columns(text)?;
    let (seen, sampled) = seen.split_once('/')?;
    Some(MonitorHolderRow {
        rank: dec(rank)?,
        trace_serial: dec(trace)?,
        holder_trace_serial: dec(holder)?,
        seen: dec(seen)?,
        sampled: dec(sampled)?,
        monitor: monitor.strip_suffix(" (Java)")?.to_string(),
    })
}

fn parse_heap_dump(begin: &Line, lines: &mut Lines) -> Result<Section, ParseError> {
    let header = |text: &str| {
        let [objects, bytes, created] = scan(text, "HEAP DUMP BEGIN ({} objects, {} bytes) {}")?;
        Some((dec(objects)?, dec(bytes)?, created.to_string()))
    };
    let (objects, bytes, created) =
        header(&begin.text).or_malformed(begin, "HEAP DUMP BEGIN line")?;
    let body = block_body(begin, lines, "HEAP DUMP END")?;
    let mut entries: Vec<HeapEntry> = Vec::new();
    for line in &body {
        match line.text.strip_prefix('\t') {
            Some(sub_line) => {
                let added = entries
                    .last_mut()
                    .and_then(|entry| add_sub_line(entry, sub_line));
                added.or_malformed(
                    line,
                    "heap dump sub-line (or one without a CLS/OBJ/ARR line)",
                )?;
            }
            None => entries.push(heap_entry(&line.text).or_malformed(line, "heap dump line")?),
        }
    }
    Ok(Section::HeapDump(HeapDumpSection {
        objects,
        bytes,
        created,
        entries,
    }))
}

/// A ROOT, CLS, OBJ or ARR line (without its sub-lines).
fn heap_entry(text: &str) -> Option<HeapEntry> {
    let (kind, _) = text.split_once(' ')?;
    match kind {
        "ROOT" => heap_root(text).map(HeapEntry::Root),
        "CLS" => class_entry(text),
        "OBJ" => object_entry(text),
        "ARR" => array_entry(text),
        _ => None,
    }
}

fn heap_root(text: &str) -> Option<HeapRoot> {
    let [id, kind, details] = scan(text, "ROOT {} (kind=<{}>{})")?;
    let object_id = hex(id)?;
    Some(match kind {
        "thread" => {
            let [id, trace] = scan(details, ", id={}, trace={}")?;
            HeapRoot::Thread {
                object_id,
                thread_serial: dec(id)?,
                trace_serial: dec(trace)?,
            }
        }
        "thread block" => HeapRoot::ThreadBlock {
            object_id,
            thread_serial: dec(scan::<1>(details, ", thread={}")?[0])?,
        },
        "JNI global ref" => {
            let [id, trace] = scan(details, ", id={}, trace={}")?;
            HeapRoot::JniGlobal {
                object_id,
                ref_id: hex(id)?,
                trace_serial: dec(trace)?,
            }
        }
        "JNI local ref" => {
            let [thread, frame] = scan(details, ", thread={}, frame={}")?;
            HeapRoot::JniLocal {
                object_id,
                thread_serial: dec(thread)?,
                frame: dec(frame)?,
            }
        }
        "Java stack" => {
            let [thread, frame] = scan(details, ", thread={}, frame={}")?;
            HeapRoot::JavaStack {
                object_id,
                thread_serial: dec(thread)?,
                frame: dec(frame)?,
            }
        }
        "native stack" => HeapRoot::NativeStack {
            object_id,
            thread_serial: dec(scan::<1>(details, ", thread={}")?[0])?,
        },
        "system class" => HeapRoot::SystemClass {
            object_id,
            name: scan::<1>(details, ", name={}")?[0].to_string(),
        },
        "busy monitor" if details.is_empty() => HeapRoot::BusyMonitor { object_id },
        "unknown" if details.is_empty() => HeapRoot::Unknown { object_id },
        _ => return None,
    })
}

fn class_entry(text: &str) -> Option<HeapEntry> {
    let [id, name, trace] = scan(text, "CLS {} (name={}, trace={})")?;
    Some(HeapEntry::Class {
        object_id: hex(id)?,
        name: name.to_string(),
        trace_serial: dec(trace)?,
        super_id: 0,
        loader_id: 0,
        signers_id: 0,
        domain_id: 0,
        statics: Vec::new(),
        constant_pool: Vec::new(),
    })
}

fn object_entry(text: &str) -> Option<HeapEntry> {
    let [id, size, trace, class] = scan(text, "OBJ {} (sz={}, trace={}, class={})")?;
    let (class_name, class_id) = class.rsplit_once('@')?;
    Some(HeapEntry::Object {
        object_id: hex(id)?,
        size: dec(size)?,
        trace_serial: dec(trace)?,
        class_name: class_name.to_string(),
        class_id: hex(class_id)?,
        fields: Vec::new(),
    })
}

/// Object arrays name their class as `name@id`; primitive arrays have no `@id`.
fn array_entry(text: &str) -> Option<HeapEntry> {
    let [id, size, trace, length, class] =
        scan(text, "ARR {} (sz={}, trace={}, nelems={}, elem type={})")?;
    let (object_id, size, trace_serial, length) = (hex(id)?, dec(size)?, dec(trace)?, dec(length)?);
    let class_ref = class
        .rsplit_once('@')
        .and_then(|(name, class_id)| Some((name, hex(class_id)?)));
    Some(match class_ref {
        Some((name, array_class_id)) => HeapEntry::ObjectArray {
            object_id,
            size,
            trace_serial,
            length,
            array_class_name: name.to_string(),
            array_class_id,
            elements: Vec::new(),
        },
        None => HeapEntry::PrimitiveArray {
            object_id,
            size,
            trace_serial,
            length,
            array_class_name: class.to_string(),
        },
    })
}

/// Attach an indented line (leading tab removed) to the entry above it.
fn add_sub_line(entry: &mut HeapEntry, sub_line: &str) -> Option<()> {
    match entry {
        HeapEntry::Class {
            super_id,
            loader_id,
            signers_id,
            domain_id,
            statics,
            constant_pool,
            ..
        } => {
            if let Some(rest) = sub_line.strip_prefix("static ") {
                let (name, value) = rest.rsplit_once('\t')?;
                statics.push((name.to_string(), hex(value)?));
            } else if let Some(rest) = sub_line.strip_prefix("constant pool entry ") {
                let (index, value) = rest.split_once('\t')?;
                constant_pool.push((dec(index)?, hex(value)?));
            } else {
                let (label, value) = sub_line.split_once("\t\t")?;
                let slot = match label {
                    "super" => super_id,
                    "loader" => loader_id,
                    "signers" => signers_id,
                    "domain" => domain_id,
                    _ => return None,
                };
                *slot = hex(value)?;
            }
        }
        HeapEntry::Object { fields, .. } => {
            // `\t<name>\t<value>`, with one more tab before the value when the name is short.
            let (name, value) = sub_line.split_once('\t')?;
            fields.push((
                name.to_string(),
                hex(value.strip_prefix('\t').unwrap_or(value))?,
            ));
        }
        HeapEntry::ObjectArray { elements, .. } => {
            let [index, value] = scan(sub_line, "[{}]\t\t{}")?;
            elements.push((dec(index)?, hex(value)?));
        }
        HeapEntry::Root(_) | HeapEntry::PrimitiveArray { .. } => return None,
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error_of(text: &str) -> ParseError {
        parse(text.as_bytes()).expect_err("parse should fail")
    }

    const HEADER: &str =
        "JAVA PROFILE 1.0.1, created Sat Mar 27 10:51:47 2021\n\nPrelude\n\n--------\n\n";

    #[test]
    fn header_and_prelude() {
        let sections = parse(HEADER.as_bytes()).unwrap();
        let expected = Section::Header {
            version: "JAVA PROFILE 1.0.1".into(),
            created: "Sat Mar 27 10:51:47 2021".into(),
            prelude: "Prelude\n".into(),
        };
        assert_eq!(sections, [expected]);
    }

    #[test]
    fn whole_files_must_start_with_the_header_line() {
        let file_error = |text: &str| parse_file(text.as_bytes()).expect_err("not a profile");
        let empty = file_error("");
        assert_eq!(empty.offset, 0);
        assert!(empty.message.starts_with("empty file"), "{empty}");
        for headerless in [
            "\n",
            "\n\nJAVA PROFILE 1.0.1, created X\n\n--------\n",
            "THREAD END (id = 1)\n",
            "JAVA PROFILE 1.0., created X\n\n--------\n",
            "JAVA PROFILE 2.0.1, created X\n\n--------\n",
            "JAVA PROFILE 1.0.1\n\n--------\n",
        ] {
            let e = file_error(headerless);
            assert_eq!(e.offset, 0, "{headerless:?}");
            assert!(e.message.contains("does not start with"), "{e}");
        }
        assert_eq!(parse_file(HEADER.as_bytes()), parse(HEADER.as_bytes()));
        let old_prof = "count callee caller time\n3 A.b()V <unknown caller> 7\n";
        assert_eq!(parse_file(old_prof.as_bytes()), parse(old_prof.as_bytes()));
        let crlf = HEADER.replace('\n', "\r\n");
        assert_eq!(parse_file(crlf.as_bytes()).unwrap().len(), 1);
    }

    #[test]
    fn header_without_dashes_is_malformed() {
        let e = error_of("THREAD END (id = 1)\nJAVA PROFILE 1.0.1, created X\n\nPrelude\n");
        assert_eq!(e.offset, 20);
        assert!(e.message.contains("--------"), "{e}");
        assert_eq!(
            error_of("JAVA PROFILE 1.0.1, created X\nPrelude\n--------\n").offset,
            30
        );
        assert_eq!(error_of("JAVA PROFILE 1.0.1, created X\n").offset, 0);
    }

    #[test]
    fn crlf_and_windows_dates() {
        let text = "JAVA PROFILE 1.0.1, created Thu Nov 02 17:11:21 2017\r\n\r\nA\r\nB\r\n\r\n--------\r\n\r\n\
                    CPU SAMPLES BEGIN (total = 0) Thu Nov 02 17:11:22 2017\r\nCPU SAMPLES END\r\n";
        let sections = parse(text.as_bytes()).unwrap();
        assert_eq!(
            sections[0],
            Section::Header {
                version: "JAVA PROFILE 1.0.1".into(),
                created: "Thu Nov 02 17:11:21 2017".into(),
                prelude: "A\nB\n".into(),
            }
        );
        assert_eq!(
            sections[1],
            Section::Cpu(CpuSection {
                title: CpuTitle::Samples,
                total: 0,
                created: "Thu Nov 02 17:11:22 2017".into(),
                rows: vec![],
            })
        );
    }

    #[test]
    fn unterminated_blocks_are_reported_at_begin() {
        let text = "THREAD END (id = 1)\nSITES BEGIN (ordered by live bytes) X\n";
        let e = error_of(text);
        assert_eq!(e.offset, 20);
        assert!(e.message.contains("SITES END"), "{e}");
        let text = "HEAP DUMP BEGIN (1 objects, 2 bytes) X\nROOT 0 (kind=<unknown>)\nSITES END\n";
        assert_eq!(error_of(text).offset, 0);
        assert_eq!(error_of("MONITOR DUMP BEGIN\n").offset, 0);
        assert_eq!(error_of("x\n").offset, 0);
    }

    #[test]
    fn malformed_rows_are_reported_at_their_line() {
        let sites = "SITES BEGIN (ordered by live bytes) X\n\
                     \x20         percent          live          alloc'ed  stack class\n\
                     \x20rank   self  accum     bytes objs     bytes  objs trace name\n\
                     \x20   1  7.74%  7.74%     99016  387     99016   387 300938 byte[]\n\
                     \x20   2  7.74%  7.74%     99016  387     99016   387\n\
                     SITES END\n";
        let e = error_of(sites);
        assert_eq!(e.offset, sites.find("    2").unwrap() as u64);
        assert!(e.message.contains("SITES row"), "{e}");

        let cpu = "CPU SAMPLES BEGIN (total = 1) X\nrank   self  accum   count trace method\n   1 abc% 1.00% 1 300001 A.b\nCPU SAMPLES END\n";
        assert_eq!(error_of(cpu).offset, cpu.find("   1").unwrap() as u64);

        let titles = "SITES BEGIN (ordered by live bytes) X\n rank\nSITES END\n";
        assert_eq!(
            error_of(titles).offset,
            titles.find(" rank").unwrap() as u64
        );
    }

    /// cpu=wall's CPU SAMPLES (its mark after the date) and WALL STATES
    /// read back as written.
    #[test]
    fn wall_clock_samples_and_their_states_read_back() {
        use crate::ascii::writer::write_section;
        use crate::wall_states::WallStateRow;
        let cpu = CpuSection {
            title: CpuTitle::Samples,
            total: 7,
            created: format!("Mon Dec  7 15:10:12 2026 {WALL_CLOCK_MARK}"),
            rows: vec![CpuRow {
                rank: 1,
                self_percent: 100.0,
                accum_percent: 100.0,
                count: 7,
                trace_serial: 300_001,
                method: Some("A.b".into()),
            }],
        };
        let states = vec![WallStateRow {
            trace_serial: 300_001,
            counts: [3, 0, 4, 0, 0],
        }];
        let mut text = Vec::new();
        write_section(&Section::Cpu(cpu.clone()), &mut text);
        write_section(&Section::WallStates(states.clone()), &mut text);
        let read = parse(&text).unwrap();
        let [Section::Cpu(read_cpu), Section::WallStates(read_states)] = &read[..] else {
            panic!("{read:?}")
        };
        assert!(read_cpu.is_wall_clock());
        assert_eq!(read_cpu, &cpu);
        assert_eq!(read_states, &states);
        let bad = "WALL STATES BEGIN\n 300001 1 2\nWALL STATES END\n";
        assert!(error_of(bad).message.contains("WALL STATES row"));
    }

    #[test]
    fn sites_totals_need_their_titles_and_both_rows() {
        let good = "SITES TOTALS BEGIN\n\
                    \x20             live bytes  live objs  alloc'ed bytes  alloc'ed objs   rows\n\
                    every site            100          2             900              9      3\n\
                    below cutoff            0          0             800              8      2\n\
                    SITES TOTALS END\n";
        let Section::SitesTotals(totals) = &parse(good.as_bytes()).unwrap()[0] else {
            panic!("not SITES TOTALS")
        };
        assert_eq!((totals.all.rows, totals.all.allocated_bytes), (3, 900));
        assert_eq!(
            (
                totals.below_cutoff.rows,
                totals.below_cutoff.allocated_objects
            ),
            (2, 8)
        );
        let swapped = good.replace("every site  ", "below cutoff").replacen(
            "below cutoff            0",
            "every site              0",
            1,
        );
        assert!(error_of(&swapped).message.contains("`every site` row"));
        let one_row = good.replace(
            "below cutoff            0          0             800              8      2\n",
            "",
        );
        assert_eq!(error_of(&one_row).offset, 0);
        let extra_column = good.replace("9      3", "9      3 4");
        assert!(error_of(&extra_column).message.contains("SITES TOTALS"));
        let no_titles = good.replace("alloc'ed objs   rows", "objs rows");
        assert_eq!(
            error_of(&no_titles).offset,
            "SITES TOTALS BEGIN\n".len() as u64
        );
    }

    #[test]
    fn unknown_and_orphan_lines() {
        let text = "THREAD END (id = 1)\nHELLO\n";
        let e = error_of(text);
        assert_eq!(e.offset, 20);
        assert!(e.message.contains("unknown line"), "{e}");

        let orphan = "THREAD END (id = 1)\n\tjava.lang.Thread.run(Thread.java:745)\n";
        let e = error_of(orphan);
        assert_eq!(e.offset, 20);
        assert!(e.message.contains("TRACE"), "{e}");

        let bad_frame = "TRACE 300001:\n\tno parenthesis here\n";
        assert_eq!(error_of(bad_frame).offset, 14);
    }

    #[test]
    fn frames_of_classes_and_methods_named_with_parentheses() {
        // Each frame line and its pieces: class|method|source|line.
        let cases = [
            ("A.b(A.java:3)", "A|b|A.java|Line(3)"),
            ("H(1)T.run(H(1)T.java:12)", "H(1)T|run|H(1)T.java|Line(12)"),
            (
                "p.H(1)T.run(O.java:Unknown line)",
                "p.H(1)T|run|O.java|Unknown",
            ),
            ("X.m(1)(X.java:Native method)", "X|m(1)|X.java|Native"),
            ("H(T.run(H(T.java:4)", "H(T|run|H(T.java|Line(4)"),
            ("a(b.C.run(C.java:5)", "a(b.C|run|C.java|Line(5)"),
            ("K:1.go(a:b.java:6)", "K:1|go|a:b.java|Line(6)"),
            (
                "X.<Unknown Method>(<Unknown Source>:Compiled method)",
                "X|<Unknown Method>|<Unknown Source>|Compiled",
            ),
        ];
        for (text, expected) in cases {
            let f = trace_frame(text).unwrap_or_else(|| panic!("{text:?} did not parse"));
            let pieces = format!(
                "{}|{}|{}|{:?}",
                f.class_name, f.method_name, f.source_file, f.line
            );
            assert_eq!(pieces, expected, "{text}");
        }
        for bad in [
            "no parenthesis here",
            "A(A.java:1)",
            "A.b(A.java)",
            "A.b(A.java:x)",
        ] {
            assert!(trace_frame(bad).is_none(), "{bad:?}");
        }
    }

    #[test]
    fn frames_written_with_odd_names_read_back() {
        let frames = vec![
            TraceFrame {
                class_name: "H(1)T".into(),
                method_name: "run".into(),
                source_file: "H(1)T.java".into(),
                line: LineInfo::Line(7),
            },
            TraceFrame {
                class_name: "q.(x".into(),
                method_name: "a)b".into(),
                source_file: "(.java".into(),
                line: LineInfo::Unknown,
            },
        ];
        let trace = Section::Trace(TraceSection {
            serial: 300001,
            thread_serial: Some(200001),
            phase: None,
            frames,
        });
        let mut text = Vec::new();
        super::super::writer::write_section(&trace, &mut text);
        let back = parse(&text).unwrap();
        let Section::Trace(back) = &back[0] else {
            panic!("not a TRACE: {back:?}")
        };
        let Section::Trace(written) = &trace else {
            unreachable!()
        };
        // `q.(x.a)b((.java`: no split leaves every piece balanced and
        // every method name holds a parenthesis: the first `(` after a
        // non-empty class and method is the one.
        assert_eq!(back.frames, written.frames);
    }

    #[test]
    fn heap_sub_lines_need_a_matching_entry() {
        let text = "HEAP DUMP BEGIN (1 objects, 2 bytes) X\nROOT 0 (kind=<unknown>)\n\tname\t\t1\nHEAP DUMP END\n";
        assert_eq!(error_of(text).offset, text.find("\tname").unwrap() as u64);
        let text = "HEAP DUMP BEGIN (1 objects, 2 bytes) X\nCLS 1 (name=X, trace=3)\n\tbogus\t\t1\nHEAP DUMP END\n";
        assert_eq!(error_of(text).offset, text.find("\tbogus").unwrap() as u64);
    }

    #[test]
    fn monitor_entries_cut_short() {
        let text = "MONITOR DUMP BEGIN\n    MONITOR LX;\n\towner: thread 1, entry count: 1\nMONITOR DUMP END\n";
        assert_eq!(error_of(text).offset, 19);
    }

    #[test]
    fn old_prof_tables_end_at_the_first_non_row() {
        let text =
            "count callee caller time\n3 A.b()V <unknown caller> 7\ncount callee caller time\n";
        let sections = parse(text.as_bytes()).unwrap();
        let row = OldProfRow {
            count: 3,
            callee: Some("A.b()V".into()),
            caller: None,
            time: 7,
        };
        assert_eq!(
            sections,
            [Section::OldProf(vec![row]), Section::OldProf(vec![])]
        );
        let bad = "count callee caller time\n3 A.b()V\n";
        assert_eq!(error_of(bad).offset, 25);
    }

    #[test]
    fn nan_percentages_parse() {
        let text = "SITES BEGIN (ordered by live bytes) X\n\
                    \x20         percent          live          alloc'ed  stack class\n\
                    \x20rank   self  accum     bytes objs     bytes  objs trace name\n\
                    \x20   1   nan%  -nan%         0    0       544     1 300000 java.lang.Class\n\
                    SITES END\n";
        let Section::Sites(sites) = &parse(text.as_bytes()).unwrap()[0] else {
            panic!("not SITES")
        };
        assert!(sites.rows[0].self_percent.is_nan() && sites.rows[0].accum_percent.is_nan());
    }

    #[test]
    fn invalid_utf8_does_not_stop_the_parser() {
        let sections =
            parse(b"THREAD START (obj=1, id = 2, name=\"\xff\", group=\"g\")\n").unwrap();
        assert!(matches!(&sections[0], Section::ThreadStart { name, .. } if name == "\u{fffd}"));
    }
}
