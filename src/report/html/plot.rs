//! The plots, drawn with plotters' SVG backend and inlined into the page. Each returns a
//! `<figure class="plot">` naming its plot, axes and series in data attributes.
use super::esc;
use plotters::prelude::*;

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
fn figure(id: &str, caption: &str, x: &str, y: &str, series: &[Series], svg: &str) -> String {
    let names: Vec<&str> = series.iter().map(|s| s.name).collect();
    format!(
        "<figure class=\"plot\" data-plot=\"{}\" data-x=\"{}\" data-y=\"{}\" data-series=\"{}\">{svg}<figcaption>{}</figcaption></figure>",
        esc(id),
        esc(x),
        esc(y),
        esc(&names.join("|")),
        esc(caption)
    )
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

fn draw_lines<'a, DB, X, Y>(
    chart: &mut ChartContext<'a, DB, Cartesian2d<X, Y>>,
    series: &[Series],
    markers: bool,
) -> DrawResult<()>
where
    DB: DrawingBackend + 'a,
    DB::ErrorType: 'static,
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
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

/// Latency (log ms) against percentile (log axis, 50 .. 99.99): one line per series.
pub fn distribution(id: &str, caption: &str, series: &[Series]) -> String {
    let (x, y) = ("percentile", "latency (ms)");
    // Both axes are drawn in log10 units (plotters' own log axis crowds its labels within
    // a decade); the labels map back to percentiles and milliseconds.
    let logged: Vec<Series> = drawable(series)
        .iter()
        .map(|s| Series {
            name: s.name,
            color: s.color,
            points: s
                .points
                .iter()
                .map(|p| p.map(|(x, y)| (x, y.max(0.001).log10())))
                .collect(),
        })
        .collect();
    let Some((_, _, lo, hi)) = bounds(&logged) else {
        return failed(id, &"no points");
    };
    let mut svg = String::new();
    let drawn = (|| -> DrawResult<()> {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE)?;
        let pad = ((hi - lo) * 0.08).max(0.1);
        let mut chart = ChartBuilder::on(&root)
            .margin(12)
            .x_label_area_size(38)
            .y_label_area_size(56)
            // Ticks at whole axis units: 0, 90, 99, 99.9, 99.99.
            .build_cartesian_2d(0f64..4.05, (lo - pad)..(hi + pad))?;
        chart
            .configure_mesh()
            .x_desc(x)
            .y_desc(y)
            .x_labels(5)
            .label_style(("sans-serif", 12))
            .axis_desc_style(("sans-serif", 13))
            .x_label_formatter(&|v| pct_label(*v))
            .y_label_formatter(&|v| super::fmt_ms(10f64.powf(*v)))
            .draw()?;
        draw_lines(&mut chart, &logged, true)?;
        root.present()?;
        Ok(())
    })();
    match drawn {
        Ok(()) => figure(id, caption, x, y, series, &svg),
        Err(e) => failed(id, &e),
    }
}

/// Linear y against linear x (rounds, connections): one line per series.
pub fn xy(id: &str, caption: &str, axes: (&str, &str), series: &[Series], markers: bool) -> String {
    let series = &drawable(series);
    let Some((x0, x1, _, y1)) = bounds(series) else {
        return failed(id, &"no points");
    };
    let mut svg = String::new();
    let drawn = (|| -> DrawResult<()> {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE)?;
        let pad = ((x1 - x0) * 0.03).max(0.5);
        let mut chart = ChartBuilder::on(&root)
            .margin(12)
            .x_label_area_size(38)
            .y_label_area_size(56)
            .build_cartesian_2d((x0 - pad)..(x1 + pad), 0f64..(y1 * 1.15).max(0.01))?;
        chart
            .configure_mesh()
            .x_desc(axes.0)
            .y_desc(axes.1)
            .label_style(("sans-serif", 12))
            .axis_desc_style(("sans-serif", 13))
            .x_label_formatter(&|v| crate::evidence::fmt_num(v.round()))
            .y_label_formatter(&|v| super::fmt_ms(*v))
            .draw()?;
        draw_lines(&mut chart, series, markers)?;
        root.present()?;
        Ok(())
    })();
    match drawn {
        Ok(()) => figure(id, caption, axes.0, axes.1, series, &svg),
        Err(e) => failed(id, &e),
    }
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
        let f = xy("rounds-A", "c", ("round", "ms"), &s, true);
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
        assert!(xy("e", "c", ("x", "y"), &[], true).contains("could not be drawn"));
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
        let f = xy("w", "c", ("round", "ms"), &wild, true);
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
}
