//! The plots, drawn with plotters' SVG backend and inlined into the page. Each returns a
//! `<figure class="plot">` naming its plot, axes and series in data attributes.
use super::esc;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
pub use plotters::style::RGBColor;

pub const SIZE: (u32, u32) = (500, 290);

/// One named line: points (x, y) in data units; None breaks the line (a gap).
pub struct Series<'a> {
    pub name: &'a str,
    pub color: RGBColor,
    pub points: Vec<Option<(f64, f64)>>,
}

pub const BLUE_: RGBColor = RGBColor(31, 95, 191);
pub const RED_: RGBColor = RGBColor(198, 40, 40);
pub const GREY_: RGBColor = RGBColor(120, 120, 120);
pub const GREEN_: RGBColor = RGBColor(26, 127, 55);

/// What a plot's y axis holds, and so how it is scaled and labelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Y {
    /// Milliseconds, linear from 0.
    Ms,
    /// Milliseconds on a log10 scale (values a thousand times apart on one plot); ticks
    /// labelled in ms.
    LogMs,
    /// Counts, linear from 0: whole-number ticks only, with thousands separators.
    Count,
    /// Any other quantity (MB ...), linear from 0, decimals as for ms.
    Value,
}

impl Y {
    fn label(self) -> &'static dyn Fn(&f64) -> String {
        match self {
            Y::Ms | Y::Value => &|v| super::fmt_ms(*v),
            Y::LogMs => &|v| super::fmt_ms(10f64.powf(*v)),
            Y::Count => &|v| count_label(*v),
        }
    }
}

/// A count axis tick: whole numbers only (a range of 0..1 would otherwise read 0.10, 0.20).
pub fn count_label(v: f64) -> String {
    match (v - v.round()).abs() < 1e-6 {
        true => crate::evidence::fmt_num(v.round()),
        false => String::new(),
    }
}

/// Percentile to the HdrHistogram-style axis: 50 -> 0.3, 90 -> 1, 99 -> 2, 99.9 -> 3 ...
pub fn pct_axis(p: f64) -> f64 {
    -(1.0 - p / 100.0).max(1e-9).log10()
}

/// The axis position back to its percentile label: "50", "99.9", "99.99".
pub fn pct_label(x: f64) -> String {
    let p = 100.0 * (1.0 - 10f64.powf(-x));
    let s = format!("{p:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// The figure wrapper with its data attributes (what a DOM check looks for).
fn figure(id: &str, caption: &str, x: &str, y: &str, names: &[&str], svg: &str) -> String {
    format!(
        "<figure class=\"plot\" data-plot=\"{}\" data-x=\"{}\" data-y=\"{}\" data-series=\"{}\">{svg}<figcaption>{}</figcaption></figure>",
        esc(id),
        esc(x),
        esc(y),
        esc(&names.join("|")),
        esc(caption)
    )
}

fn names<'a>(series: &[Series<'a>]) -> Vec<&'a str> {
    series.iter().map(|s| s.name).collect()
}

/// Beyond this a value is not drawable (plotters loops on ranges near f64::MAX); it can
/// only come from a peer's claim (another server's hub times) and stays in the tables.
const DRAWABLE: f64 = 1e12;

/// The series with undrawable points turned into gaps.
fn drawable<'a>(series: &[Series<'a>]) -> Vec<Series<'a>> {
    let ok = |v: f64| v.is_finite() && v.abs() <= DRAWABLE;
    series
        .iter()
        .map(|s| Series {
            name: s.name,
            color: s.color,
            points: s
                .points
                .iter()
                .map(|p| p.filter(|&(x, y)| ok(x) && ok(y)))
                .collect(),
        })
        .collect()
}

fn bounds(series: &[Series]) -> Option<(f64, f64, f64, f64)> {
    let pts: Vec<(f64, f64)> = series
        .iter()
        .flat_map(|s| s.points.iter().flatten().copied())
        .collect();
    if pts.is_empty() {
        return None;
    }
    let f = |g: fn(f64, f64) -> f64, init: f64, k: fn(&(f64, f64)) -> f64| {
        pts.iter().map(k).fold(init, g)
    };
    Some((
        f(f64::min, f64::INFINITY, |p| p.0),
        f(f64::max, f64::NEG_INFINITY, |p| p.0),
        f(f64::min, f64::INFINITY, |p| p.1),
        f(f64::max, f64::NEG_INFINITY, |p| p.1),
    ))
}

/// Contiguous runs of points (a None ends a run).
fn runs(points: &[Option<(f64, f64)>]) -> Vec<Vec<(f64, f64)>> {
    let mut out = vec![Vec::new()];
    for p in points {
        match p {
            Some(p) => out.last_mut().map(|v| v.push(*p)).unwrap_or(()),
            None if out.last().is_some_and(|v| !v.is_empty()) => out.push(Vec::new()),
            None => {}
        }
    }
    out.retain(|v| !v.is_empty());
    out
}

type DrawResult<T> = Result<T, Box<dyn std::error::Error>>;

fn draw_lines<'a, 'b: 'a>(
    chart: &mut Chart<'a, 'b>,
    series: &[Series],
    markers: bool,
) -> DrawResult<()> {
    for s in series {
        let color = s.color;
        let mut first = true;
        for run in runs(&s.points) {
            let line = chart.draw_series(LineSeries::new(run.clone(), color.stroke_width(2)))?;
            if first {
                line.label(s.name).legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2))
                });
                first = false;
            }
            if markers {
                chart.draw_series(run.iter().map(|&p| Circle::new(p, 3, color.filled())))?;
            }
        }
    }
    Ok(())
}

fn draw_bars<'a, 'b: 'a>(
    chart: &mut Chart<'a, 'b>,
    series: &[Series],
    base: f64,
) -> DrawResult<()> {
    let width = 0.8 / series.len().max(1) as f64;
    for (j, s) in series.iter().enumerate() {
        let color = s.color;
        let left = |x: f64| x - 0.4 + j as f64 * width;
        chart
            .draw_series(s.points.iter().flatten().map(|&(x, y)| {
                Rectangle::new([(left(x), base), (left(x) + width, y)], color.filled())
            }))?
            .label(s.name)
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 14, y)], color.stroke_width(8))
            });
    }
    Ok(())
}

/// The series' names in a box at the upper left.
fn legend<'a, 'b: 'a>(chart: &mut Chart<'a, 'b>) -> DrawResult<()> {
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .label_font(("sans-serif", 12))
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.3))
        .draw()?;
    Ok(())
}

/// A plot that could not be drawn says so instead of showing a blank.
fn failed(id: &str, e: &dyn std::fmt::Display) -> String {
    format!(
        "<div class=\"invalid\" data-plot-error=\"{}\">plot {} could not be drawn: {}</div>",
        esc(id),
        esc(id),
        esc(&e.to_string())
    )
}

/// The axes of one plot: ranges in drawing units, titles, and how ticks are labelled.
struct Frame<'f> {
    x: std::ops::Range<f64>,
    y: std::ops::Range<f64>,
    titles: (&'f str, &'f str),
    /// Most x ticks (plotters picks round positions within it).
    x_ticks: usize,
    x_label: &'f dyn Fn(&f64) -> String,
    y_label: &'f dyn Fn(&f64) -> String,
}

type Chart<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// What a plot draws on its frame.
enum Body<'s, 'n> {
    /// One line per series, with a marker on each point or not.
    Lines(&'s [Series<'n>], bool),
    /// Grouped bars from the given base (0, or the bottom of a log axis): a point's x is
    /// its category's index.
    Bars(&'s [Series<'n>], f64),
}

/// The one axis setup every plot shares (size, margins, mesh, fonts, axis titles); `body`
/// draws the data on it. The figure, or a line saying why it could not be drawn.
fn draw(id: &str, caption: &str, frame: Frame, names: &[&str], body: Body) -> String {
    let mut svg = String::new();
    let drawn = (|| -> DrawResult<()> {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE)?;
        let mut chart = ChartBuilder::on(&root)
            .margin(12)
            .x_label_area_size(38)
            .y_label_area_size(56)
            .build_cartesian_2d(frame.x.clone(), frame.y.clone())?;
        chart
            .configure_mesh()
            .x_desc(frame.titles.0)
            .y_desc(frame.titles.1)
            .x_labels(frame.x_ticks)
            .label_style(("sans-serif", 12))
            .axis_desc_style(("sans-serif", 13))
            .x_label_formatter(frame.x_label)
            .y_label_formatter(frame.y_label)
            .draw()?;
        match body {
            Body::Lines(series, markers) => draw_lines(&mut chart, series, markers)?,
            Body::Bars(series, base) => draw_bars(&mut chart, series, base)?,
        }
        legend(&mut chart)?;
        root.present()?;
        Ok(())
    })();
    match drawn {
        Ok(()) => figure(id, caption, frame.titles.0, frame.titles.1, names, &svg),
        Err(e) => failed(id, &e),
    }
}

/// The series with each point mapped by `f` (drawing units for a log axis).
fn mapped<'a>(series: &[Series<'a>], f: impl Fn((f64, f64)) -> (f64, f64)) -> Vec<Series<'a>> {
    series
        .iter()
        .map(|s| Series {
            name: s.name,
            color: s.color,
            points: s.points.iter().map(|p| p.map(&f)).collect(),
        })
        .collect()
}

/// Latency (log ms) against percentile (log axis, 50 .. 99.99): one line per series.
pub fn distribution(id: &str, caption: &str, series: &[Series]) -> String {
    // Both axes are drawn in log10 units (plotters' own log axis crowds its labels within
    // a decade); the labels map back to percentiles and milliseconds.
    let logged = mapped(&drawable(series), |(x, y)| (x, y.max(0.001).log10()));
    let Some((_, _, lo, hi)) = bounds(&logged) else {
        return failed(id, &"no points");
    };
    let pad = ((hi - lo) * 0.08).max(0.1);
    let frame = Frame {
        // Ticks at whole axis units: 0, 90, 99, 99.9, 99.99.
        x: 0f64..4.05,
        y: (lo - pad)..(hi + pad),
        titles: ("percentile", "latency (ms)"),
        x_ticks: 5,
        x_label: &|v| pct_label(*v),
        y_label: &|v| super::fmt_ms(10f64.powf(*v)),
    };
    draw(
        id,
        caption,
        frame,
        &names(series),
        Body::Lines(&logged, true),
    )
}

/// The linear y frame over the points' x range, from 0 to above the highest point.
fn linear_frame<'f>(
    (x0, x1, _, y1): (f64, f64, f64, f64),
    titles: (&'f str, &'f str),
    x_label: &'f dyn Fn(&f64) -> String,
    y: Y,
) -> Frame<'f> {
    let pad = ((x1 - x0) * 0.03).max(0.5);
    Frame {
        x: (x0 - pad)..(x1 + pad),
        y: 0f64..(y1 * 1.15).max(0.01),
        titles,
        x_ticks: 10,
        x_label,
        y_label: y.label(),
    }
}

/// Linear y against linear x (rounds, connections): one line per series.
pub fn xy(
    id: &str,
    caption: &str,
    axes: (&str, &str),
    y: Y,
    series: &[Series],
    markers: bool,
) -> String {
    let series = &drawable(series);
    let Some(b) = bounds(series) else {
        return failed(id, &"no points");
    };
    let x_label = |v: &f64| crate::evidence::fmt_num(v.round());
    let frame = linear_frame(b, axes, &x_label, y);
    draw(
        id,
        caption,
        frame,
        &names(series),
        Body::Lines(series, markers),
    )
}

/// Linear y against x on a log2 axis (concurrency 1, 2, 4 ... 64), ticks at powers of two.
pub fn xy_log2(id: &str, caption: &str, axes: (&str, &str), series: &[Series]) -> String {
    let logged = mapped(&drawable(series), |(x, y)| (x.max(1e-3).log2(), y));
    let Some(b) = bounds(&logged) else {
        return failed(id, &"no points");
    };
    let whole = |v: &f64| (v - v.round()).abs() < 1e-6;
    let x_label = |v: &f64| {
        if whole(v) {
            crate::evidence::fmt_num(2f64.powf(v.round()))
        } else {
            String::new()
        }
    };
    let mut frame = linear_frame(b, axes, &x_label, Y::Ms);
    frame.x = (b.0 - 0.3)..(b.1 + 0.3);
    frame.x_ticks = ((b.1 - b.0).ceil() as usize + 2).min(12);
    draw(
        id,
        caption,
        frame,
        &names(series),
        Body::Lines(&logged, true),
    )
}

/// Grouped bars: one group per category, one bar per series (a point's x is its
/// category's index); a None value leaves its bar out. With [`Y::LogMs`] the bars rise
/// from the bottom of a log axis, so a 2 s tail and a 2 ms one both stay readable.
pub fn bars(
    id: &str,
    caption: &str,
    axes: (&str, &str),
    y: Y,
    categories: &[&str],
    series: &[Series],
) -> String {
    let series = &drawable(series);
    let logged;
    let series = match y {
        Y::LogMs => {
            logged = mapped(series, |(x, v)| (x, v.max(0.001).log10()));
            &logged
        }
        _ => series,
    };
    let Some(b) = bounds(series) else {
        return failed(id, &"no bars");
    };
    let x_label = |v: &f64| {
        let i = v.round();
        let named = (v - i).abs() < 1e-6 && i >= 0.0;
        named
            .then(|| categories.get(i as usize).copied())
            .flatten()
            .unwrap_or("")
            .to_string()
    };
    let mut frame = linear_frame(b, axes, &x_label, y);
    frame.x = -0.5..(categories.len() as f64 - 0.5);
    // Room above the tallest bar for the legend (a line per series).
    let room = 1.25 + 0.15 * series.len() as f64;
    frame.y = match y {
        Y::LogMs => {
            // From the decade below the lowest bar, so the shortest bar still shows; the
            // tall bars sit at the right (later scenarios), away from the legend.
            let lo = (b.2 - 0.15).floor();
            lo..(b.3 + 0.25 * (b.3 - lo).max(1.0))
        }
        _ => 0f64..(b.3 * room).max(1.0),
    };
    frame.x_ticks = categories.len();
    let base = frame.y.start;
    draw(id, caption, frame, &names(series), Body::Bars(series, base))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentile_axis_round_trips() {
        for (p, l) in [
            (50.0, "50"),
            (90.0, "90"),
            (99.0, "99"),
            (99.9, "99.9"),
            (99.99, "99.99"),
        ] {
            assert_eq!(pct_label(pct_axis(p)), l);
        }
        assert!((pct_axis(99.9) - 3.0).abs() < 1e-9);
    }

    #[test]
    fn gaps_split_lines_and_plots_carry_their_series() {
        let r = runs(&[
            Some((1.0, 1.0)),
            None,
            None,
            Some((3.0, 2.0)),
            Some((4.0, 1.0)),
        ]);
        assert_eq!(r.len(), 2);
        let s = [Series {
            name: "last client",
            color: RED_,
            points: vec![Some((1.0, 2.0)), Some((2.0, 5.0))],
        }];
        let f = xy("rounds-A", "c", ("round", "ms"), Y::Ms, &s, true);
        assert!(
            f.starts_with("<figure class=\"plot\" data-plot=\"rounds-A\""),
            "{f}"
        );
        assert!(
            f.contains("<svg") && f.contains("polyline") && f.contains("last client"),
            "{f}"
        );
        let d = distribution("d", "c", &s);
        assert!(d.contains("99.9") && d.contains("percentile"), "{d}");
        assert!(xy("e", "c", ("x", "y"), Y::Count, &[], true).contains("could not be drawn"));
        // A peer's numbers (hub times of another server) are drawn or refused, never a panic.
        let wild = [Series {
            name: "hub",
            color: GREEN_,
            points: vec![
                Some((1.0, 1e308)),
                Some((2.0, -5.0)),
                Some((3.0, f64::NAN)),
                Some((f64::INFINITY, 1.0)),
            ],
        }];
        let f = xy("w", "c", ("round", "ms"), Y::Ms, &wild, true);
        assert!(
            f.contains("<svg") || f.contains("could not be drawn"),
            "{f}"
        );
        let d = distribution("w", "c", &wild);
        assert!(
            d.contains("<svg") || d.contains("could not be drawn"),
            "{d}"
        );
    }

    /// The numbers among an SVG's text elements (tick labels), ascending.
    fn numeric_texts(svg: &str) -> Vec<f64> {
        let mut v: Vec<f64> = svg
            .split("<text")
            .skip(1)
            .filter_map(|t| t.split_once('>')?.1.split_once("</text>"))
            .filter_map(|(t, _)| t.trim().replace(',', "").parse().ok())
            .collect();
        v.sort_by(f64::total_cmp);
        v
    }

    #[test]
    fn log_bars_keep_a_two_second_tail_and_a_millisecond_readable_and_counts_are_whole() {
        let s = [Series {
            name: "p99",
            color: BLUE_,
            points: vec![Some((0.0, 1.6)), Some((1.0, 2200.0))],
        }];
        let b = bars(
            "l",
            "c",
            ("scenario", "ms (log scale)"),
            Y::LogMs,
            &["a", "b"],
            &s,
        );
        let ticks = numeric_texts(&b);
        assert!(ticks.len() >= 3, "{ticks:?}");
        assert!(ticks[0] > 0.0 && ticks[0] <= 1.6, "{ticks:?}");
        let ratios: Vec<f64> = ticks.windows(2).map(|w| w[1] / w[0]).collect();
        assert!(
            ratios.iter().all(|r| (r / ratios[0] - 1.0).abs() < 0.1),
            "log ticks: equal ratios {ticks:?}"
        );
        assert!(b.matches("<rect").count() >= 2, "{b}");
        let zeros = [Series {
            name: "all nodes",
            color: GREY_,
            points: vec![Some((0.0, 0.0)), Some((1.0, 0.0))],
        }];
        let b = bars(
            "d",
            "c",
            ("scenario", "duplicates"),
            Y::Count,
            &["a", "b"],
            &zeros,
        );
        let ticks = numeric_texts(&b);
        assert!(
            !ticks.is_empty() && ticks.iter().all(|t| t.fract() == 0.0),
            "{ticks:?}"
        );
        assert_eq!(count_label(1200.0), "1,200");
        assert_eq!(count_label(0.5), "");
    }

    #[test]
    fn bars_name_their_categories_and_log2_ticks_are_powers_of_two() {
        let s = [
            Series {
                name: "computed",
                color: BLUE_,
                points: vec![Some((0.0, 10.0)), Some((1.0, 5.0))],
            },
            Series {
                name: "live, measured",
                color: GREEN_,
                points: vec![Some((0.0, 12.0)), None],
            },
        ];
        let b = bars(
            "ways",
            "c",
            ("way", "ms"),
            Y::Ms,
            &["seq new", "par new"],
            &s,
        );
        for t in [
            "seq new",
            "par new",
            "computed",
            "live, measured",
            "way",
            "ms",
        ] {
            assert!(
                b.contains(&format!("{t}\n")) || b.contains(&format!(">{t}<")),
                "{t}: {b}"
            );
        }
        assert!(b.matches("<rect").count() >= 3, "{b}");
        let l = xy_log2(
            "p99",
            "c",
            ("concurrency", "ms"),
            &[Series {
                name: "p99",
                color: GREEN_,
                points: [1.0, 2.0, 4.0, 64.0]
                    .iter()
                    .map(|&c| Some((c, c)))
                    .collect(),
            }],
        );
        for t in ["1", "2", "4", "8", "16", "32", "64"] {
            assert!(
                l.contains(&format!("\n{t}\n")) || l.contains(&format!(">{t}<")),
                "{t}: {l}"
            );
        }
        assert!(!l.contains(">1.4<") && !l.contains("\n1.4\n"), "{l}");
    }
}
