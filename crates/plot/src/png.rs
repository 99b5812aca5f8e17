//! [`PngRenderer`]: our SVG charts rasterised with resvg, so a PNG looks like its SVG.
//! Text is drawn with the system's fonts (fontconfig's directories; we ship none):
//! the first of the chart's font families that is installed, else any sans face.

use resvg::tiny_skia::{Pixmap, Transform};
use resvg::usvg::{Options, Tree};

use crate::PlotError;

/// Families tried for `sans-serif`, in order, when the chart's own are missing.
const SANS_FAMILIES: [&str; 4] = ["DejaVu Sans", "Liberation Sans", "Arial", "Noto Sans"];

/// Renders SVG text to PNG bytes; loads the system fonts once.
pub struct PngRenderer {
    options: Options<'static>,
    /// Pixels per SVG unit: 2 for sharp images on high-density screens.
    scale: f32,
}

impl PngRenderer {
    /// A renderer at `scale` pixels per SVG unit.
    pub fn new(scale: f32) -> PngRenderer {
        let mut options = Options::default();
        let fonts = options.fontdb_mut();
        fonts.load_system_fonts();
        let installed = |family: &str| {
            fonts
                .faces()
                .any(|face| face.families.iter().any(|(name, _)| name == family))
        };
        let sans = SANS_FAMILIES
            .iter()
            .find(|family| installed(family))
            .map(|family| (*family).to_owned())
            .or_else(|| {
                fonts
                    .faces()
                    .next()
                    .and_then(|face| face.families.first().map(|(name, _)| name.clone()))
            });
        if let Some(sans) = sans {
            fonts.set_sans_serif_family(sans.clone());
            options.font_family = sans;
        }
        PngRenderer { options, scale }
    }

    /// False when the system has no fonts at all: PNGs would have no text.
    pub fn has_fonts(&self) -> bool {
        !self.options.fontdb.is_empty()
    }

    /// The PNG of `svg`; `chart` names it in errors.
    pub fn render(&self, svg: &str, chart: &str) -> Result<Vec<u8>, PlotError> {
        let failed = |reason: String| PlotError::Png {
            chart: chart.to_owned(),
            reason,
        };
        let tree = Tree::from_str(svg, &self.options).map_err(|err| failed(err.to_string()))?;
        let size = tree.size();
        let (width, height) = (
            (size.width() * self.scale).ceil() as u32,
            (size.height() * self.scale).ceil() as u32,
        );
        let mut pixmap = Pixmap::new(width, height)
            .ok_or_else(|| failed(format!("cannot make a {width}x{height} image")))?;
        let transform = Transform::from_scale(self.scale, self.scale);
        resvg::render(&tree, transform, &mut pixmap.as_mut());
        pixmap.encode_png().map_err(|err| failed(err.to_string()))
    }
}
