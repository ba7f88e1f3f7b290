//! The SVG text of a fragment picture, from its [`Layout`]: a heading, the plot (a
//! `<g class="fragment ...">` with a `<title>` per fragment or group), the time strip,
//! a legend and the caption. Plain SVG 1.1 with one `<style>`: no script, no external
//! reference, so it shows the same in a browser's `<img>`, alone, or in an editor.

use super::super::colormap::{hex, viridis};
use super::layout::{layout, px, Layout, Mark, Shape, LEFT, RIGHT, WIDTH};
use super::model::Picture;
use super::scale::{count, iso};

/// How the classes look. Hidden fragments are outlines only; what a consolidation
/// replaced is dashed, what comes later dotted; a consolidated fragment has a thick edge.
const STYLE: &str = "text{fill:#222}\
.fragment rect,.fragments rect{stroke-width:1.5}\
.live rect{fill-opacity:.35}\
.partial rect{fill-opacity:.2;stroke-dasharray:6 3}\
.consolidated rect{stroke-width:3.5}\
.hidden rect{fill:none;stroke:#888;stroke-dasharray:3 3}\
.later rect{stroke:#bbb;stroke-dasharray:1 4}\
.mbr{fill:none;stroke:#000;stroke-opacity:.5;stroke-width:.6}\
.frame{fill:none;stroke:#555}\
.tick{stroke:#555}\
.written rect{stroke:none}\
.condition rect,.conditions rect{stroke:#611}\
.condition.later rect,.conditions.later rect{fill-opacity:.3}\
.at{stroke:#c00;stroke-dasharray:4 2}\
.note{fill:#555}";

/// The picture's SVG file.
pub fn svg(p: &Picture) -> Vec<u8> {
    let l = layout(p);
    let mut o = String::with_capacity(4096 + 400 * l.shapes.len());
    o.push_str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    o.push_str(&format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"{w}\" \
         height=\"{h}\" viewBox=\"0 0 {w} {h}\" font-family=\"sans-serif\" \
         font-size=\"12\">\n",
        w = px(WIDTH),
        h = px(l.height)
    ));
    let heading = match p.at {
        None => "Fragments now".to_string(),
        Some(t) => format!("Fragments at T = {t} ({})", iso(t)),
    };
    o.push_str(&format!("<title>{}</title>\n", esc(&heading)));
    o.push_str(&format!(
        "<desc>Made by fragfs from the array's metadata alone (no tile decoded): each \
         fragment where its non-empty domain lies, coloured by when it was written; \
         hover a shape for its name, timestamps, domain, cells and size. {}</desc>\n",
        esc(&l.notes.join("; "))
    ));
    o.push_str(&format!("<style>{STYLE}</style>\n"));
    o.push_str(&format!(
        "<text x=\"{}\" y=\"22\" font-size=\"16\" font-weight=\"bold\">{}</text>\n",
        px(LEFT),
        esc(&heading)
    ));
    for (i, line) in summary(p).iter().enumerate() {
        o.push_str(&format!(
            "<text x=\"{}\" y=\"{}\">{}</text>\n",
            px(LEFT),
            42 + 16 * i,
            esc(line)
        ));
    }
    plot(&mut o, &l);
    o.push_str("<g id=\"fragments\">\n");
    for s in &l.shapes {
        shape(&mut o, s);
    }
    o.push_str("</g>\n");
    strip(&mut o, &l, p);
    legend(&mut o, &l);
    o.push_str("</svg>\n");
    o.into_bytes()
}

/// The heading's next lines: how many fragments stand how; the deletes and updates.
fn summary(p: &Picture) -> Vec<String> {
    use super::model::Status;
    let n =
        |f: &dyn Fn(&Status) -> bool| p.fragments.iter().filter(|x| f(&x.status)).count() as u64;
    let visible = n(&|s| s.visible());
    let partial = n(&|s| matches!(s, Status::Partial));
    let replaced = n(&|s| matches!(s, Status::Replaced { .. }));
    let later = n(&|s| matches!(s, Status::Later));
    let consolidated = p
        .fragments
        .iter()
        .filter(|f| f.status.visible() && f.consolidated.is_some())
        .count() as u64;
    let mut of_visible = Vec::new();
    if partial > 0 {
        of_visible.push(format!("{} in part", count(partial)));
    }
    if consolidated > 0 {
        of_visible.push(format!("{} consolidated", count(consolidated)));
    }
    let mut line = format!(
        "{} fragments: {} visible",
        count(p.fragments.len() as u64),
        count(visible)
    );
    if !of_visible.is_empty() {
        line.push_str(&format!(" ({})", of_visible.join(", ")));
    }
    let mut hidden = Vec::new();
    if replaced > 0 {
        hidden.push(format!("{} replaced by a consolidation", count(replaced)));
    }
    if later > 0 {
        hidden.push(format!("{} written later", count(later)));
    }
    if !hidden.is_empty() {
        line.push_str(&format!("; hidden: {}", hidden.join(", ")));
    }
    let mut lines = vec![line];
    if !p.conditions.is_empty() {
        let applied = p.conditions.iter().filter(|c| c.applied).count() as u64;
        lines.push(format!(
            "deletes and updates: {}, {} of them applied",
            count(p.conditions.len() as u64),
            count(applied)
        ));
    }
    lines
}

fn plot(o: &mut String, l: &Layout) {
    let [x, y, w, h] = l.plot;
    o.push_str(&format!(
        "<rect class=\"frame\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/>\n",
        px(x),
        px(y),
        px(w),
        px(h)
    ));
    let bottom = y + h;
    for (at, label) in &l.across.marks {
        o.push_str(&format!(
            "<path class=\"tick\" d=\"M{} {}v5\"/><text x=\"{}\" y=\"{}\" \
             text-anchor=\"middle\">{}</text>\n",
            px(*at),
            px(bottom),
            px(*at),
            px(bottom + 18.0),
            esc(label)
        ));
    }
    o.push_str(&format!(
        "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" font-weight=\"bold\">{}</text>\n",
        px(x + w / 2.0),
        px(bottom + 36.0),
        esc(&l.across.name)
    ));
    for (at, label) in &l.down.marks {
        o.push_str(&format!(
            "<path class=\"tick\" d=\"M{} {}h-5\"/><text x=\"{}\" y=\"{}\" \
             text-anchor=\"end\">{}</text>\n",
            px(x),
            px(*at),
            px(x - 8.0),
            px(*at + 4.0),
            esc(label)
        ));
    }
    o.push_str(&format!(
        "<text transform=\"translate({} {}) rotate(-90)\" text-anchor=\"middle\" \
         font-weight=\"bold\">{}</text>\n",
        px(x - 70.0),
        px(y + h / 2.0),
        esc(&l.down.name)
    ));
}

fn shape(o: &mut String, s: &Shape) {
    let colour = hex(s.colour);
    let classes = match s.rect {
        Some(_) => s.classes.clone(),
        None => format!("{} unplaced", s.classes),
    };
    o.push_str(&format!(
        "<g class=\"{}\"><title>{}</title>",
        esc(&classes),
        esc(&s.title)
    ));
    if let Some([x, y, w, h]) = s.rect {
        o.push_str(&format!(
            "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{colour}\" \
             stroke=\"{colour}\"/>",
            px(x),
            px(y),
            px(w),
            px(h)
        ));
    }
    if !s.mbrs.is_empty() {
        o.push_str(&format!("<path class=\"mbr\" d=\"{}\"/>", s.mbrs));
    }
    if let (Some(label), Some([x, y, ..])) = (&s.label, s.rect) {
        o.push_str(&format!(
            "<text x=\"{}\" y=\"{}\" font-size=\"11\">{}</text>",
            px(x + 4.0),
            px(y + 13.0),
            esc(label)
        ));
    }
    o.push_str("</g>\n");
}

fn mark(o: &mut String, m: &Mark) {
    let [x, y, w, h] = m.rect;
    o.push_str(&format!(
        "<g class=\"{}\"><title>{}</title><rect x=\"{}\" y=\"{}\" width=\"{}\" \
         height=\"{}\" fill=\"{}\"/></g>\n",
        esc(&m.classes),
        esc(&m.title),
        px(x),
        px(y),
        px(w),
        px(h),
        hex(m.colour)
    ));
}

/// The time strip: when fragments were written (a histogram), the deletes and updates
/// below it, the picture's time, and the time axis.
fn strip(o: &mut String, l: &Layout, p: &Picture) {
    o.push_str("<g id=\"time\">\n");
    o.push_str(&format!(
        "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">written</text>\n",
        px(LEFT - 8.0),
        px(l.strip_base - 4.0)
    ));
    if !p.conditions.is_empty() {
        o.push_str(&format!(
            "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">deletes</text>\n",
            px(LEFT - 8.0),
            px(l.strip_base + 14.0)
        ));
    }
    for b in &l.bars {
        mark(o, b);
    }
    for c in &l.conditions {
        mark(o, c);
    }
    o.push_str(&format!(
        "<path class=\"frame\" d=\"M{} {}H{}\"/>\n",
        px(LEFT),
        px(l.strip_base),
        px(RIGHT)
    ));
    let labels = l.strip_base + 32.0;
    for (at, label) in &l.time_marks {
        o.push_str(&format!(
            "<path class=\"tick\" d=\"M{} {}v4\"/><text x=\"{}\" y=\"{}\" \
             text-anchor=\"middle\">{}</text>\n",
            px(*at),
            px(l.strip_base + 16.0),
            px(*at),
            px(labels),
            esc(label)
        ));
    }
    if let Some((at, label)) = &l.at_mark {
        o.push_str(&format!(
            "<path class=\"at\" d=\"M{} {}V{}\"/><text x=\"{}\" y=\"{}\" fill=\"#c00\" \
             text-anchor=\"middle\">{}</text>\n",
            px(*at),
            px(l.strip_top - 4.0),
            px(l.strip_base + 16.0),
            px(*at),
            px(l.strip_top - 8.0),
            esc(label)
        ));
    }
    o.push_str(&format!(
        "<text x=\"{}\" y=\"{}\" class=\"note\">time, ms since 1970-01-01 UTC: {} ({}) to {} \
         ({})</text>\n",
        px(LEFT),
        px(labels + 18.0),
        l.times.0,
        iso(l.times.0),
        l.times.1,
        iso(l.times.1)
    ));
    o.push_str("</g>\n");
}

/// The legend (what each kind of shape means), the colour scale of time, the notes.
fn legend(o: &mut String, l: &Layout) {
    let y = l.strip_base + 72.0;
    o.push_str("<g id=\"legend\">\n");
    o.push_str("<defs><linearGradient id=\"time-scale\">");
    for i in 0..=10 {
        let x = f64::from(i) / 10.0;
        o.push_str(&format!(
            "<stop offset=\"{}\" stop-color=\"{}\"/>",
            px(x * 100.0) + "%",
            hex(viridis(x))
        ));
    }
    o.push_str("</linearGradient></defs>\n");
    o.push_str(&format!(
        "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">older</text><rect x=\"{}\" y=\"{}\" \
         width=\"120\" height=\"10\" fill=\"url(#time-scale)\"/><text x=\"{}\" y=\"{}\">newer</text>\n",
        px(LEFT - 8.0),
        px(y),
        px(LEFT),
        px(y - 9.0),
        px(LEFT + 126.0),
        px(y)
    ));
    let swatches: [(&str, &str); 6] = [
        ("fragment live", "visible"),
        ("fragment partial", "visible in part"),
        ("fragment live consolidated", "consolidated"),
        ("fragment hidden replaced", "replaced (hidden)"),
        ("fragment hidden later", "written later (hidden)"),
        ("condition applied", "delete or update"),
    ];
    let mut x = LEFT + 200.0;
    let mut y = y;
    let swatch = hex(viridis(0.6));
    for (classes, words) in swatches {
        let width = 24.0 + 6.5 * words.len() as f64;
        if x + width > RIGHT {
            x = LEFT + 200.0;
            y += 18.0;
        }
        o.push_str(&format!(
            "<g class=\"{classes}\"><rect x=\"{}\" y=\"{}\" width=\"14\" height=\"10\" \
             fill=\"{}\" stroke=\"{}\"/></g><text x=\"{}\" y=\"{}\">{words}</text>\n",
            px(x),
            px(y - 9.0),
            if classes.starts_with("condition") {
                "#c81e1e"
            } else {
                &swatch
            },
            swatch,
            px(x + 18.0),
            px(y)
        ));
        x += width;
    }
    for (i, note) in l.notes.iter().enumerate() {
        o.push_str(&format!(
            "<text x=\"{}\" y=\"{}\" class=\"note\">{}</text>\n",
            px(LEFT),
            px(y + 24.0 + 16.0 * i as f64),
            esc(note)
        ));
    }
    o.push_str("</g>\n");
}

/// Text for XML: the five specials escaped, and the characters XML 1.0 cannot hold
/// (controls other than tab and newline; U+FFFE, U+FFFF) as U+FFFD.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\n' | '\t' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped_for_xml() {
        assert_eq!(
            esc("a<b & \"c\"\u{1}\n"),
            "a&lt;b &amp; &quot;c&quot;\u{FFFD}\n"
        );
    }
}
