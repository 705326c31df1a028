#include "plots/Colormap.h"

#include <algorithm>
#include <cmath>
#include <qcustomplot.h>

namespace attnscope {

namespace {

    // 33 samples (t = k/32) of each published map, 8-bit sRGB. Linear interpolation between them reproduces the
    // published 256-entry tables within 3/255 per channel for viridis, magma and inferno, and within 6/255 for
    // cividis (whose table has small ripples from its optimisation; the interpolation smooths them).
    constexpr int sampleCount = 33;
    using Samples = std::array<uint32_t, sampleCount>;

    constexpr Samples viridisSamples = {
        0x440154,
        0x470d60,
        0x48186a,
        0x482374,
        0x472d7b,
        0x453781,
        0x424086,
        0x3e4989,
        0x3b528b,
        0x375b8d,
        0x33638d,
        0x2f6b8e,
        0x2c728e,
        0x297a8e,
        0x26828e,
        0x23898e,
        0x21918c,
        0x1f988b,
        0x1fa088,
        0x22a785,
        0x28ae80,
        0x32b67a,
        0x3fbc73,
        0x4ec36b,
        0x5ec962,
        0x70cf57,
        0x84d44b,
        0x98d83e,
        0xaddc30,
        0xc2df23,
        0xd8e219,
        0xece51b,
        0xfde725,
    };
    constexpr Samples magmaSamples = {
        0x000004,
        0x030312,
        0x0a0822,
        0x130d34,
        0x1d1147,
        0x29115a,
        0x36106b,
        0x440f76,
        0x51127c,
        0x5d177f,
        0x6a1c81,
        0x762181,
        0x832681,
        0x902a81,
        0x9c2e7f,
        0xaa337d,
        0xb73779,
        0xc43c75,
        0xd0416f,
        0xdc4869,
        0xe75263,
        0xef5d5e,
        0xf56b5c,
        0xf9795d,
        0xfc8961,
        0xfd9869,
        0xfea772,
        0xfeb67c,
        0xfec488,
        0xfed395,
        0xfde2a3,
        0xfcf0b2,
        0xfcfdbf,
    };
    constexpr Samples infernoSamples = {
        0x000004,
        0x040312,
        0x0b0724,
        0x150b37,
        0x210c4a,
        0x2f0a5b,
        0x3d0965,
        0x4a0c6b,
        0x57106e,
        0x64156e,
        0x71196e,
        0x7d1e6d,
        0x8a226a,
        0x972766,
        0xa32c61,
        0xb0315b,
        0xbc3754,
        0xc73e4c,
        0xd24644,
        0xdb503b,
        0xe45a31,
        0xeb6628,
        0xf1731d,
        0xf68013,
        0xf98e09,
        0xfb9d07,
        0xfcac11,
        0xfbbc21,
        0xf9cb35,
        0xf5db4c,
        0xf2ea69,
        0xf3f68a,
        0xfcffa4,
    };
    constexpr Samples cividisSamples = {
        0x00224e,
        0x00285b,
        0x002e6a,
        0x053371,
        0x1a386f,
        0x273e6e,
        0x32436d,
        0x3b496c,
        0x434e6c,
        0x4b546c,
        0x535a6d,
        0x5a5f6e,
        0x61656f,
        0x686a71,
        0x6f7073,
        0x767676,
        0x7d7c78,
        0x848279,
        0x8c8878,
        0x938e78,
        0x9b9476,
        0xa39a74,
        0xaba072,
        0xb4a76f,
        0xbcae6c,
        0xc4b468,
        0xcdbb63,
        0xd5c25e,
        0xdec958,
        0xe7d150,
        0xf0d846,
        0xf9e03a,
        0xfee838,
    };

    int toByte(double v) { return std::clamp(int(std::lround(v)), 0, 255); }

    ColormapTable fromSamples(const Samples& samples)
    {
        ColormapTable table {};
        for (int i = 0; i < 256; ++i) {
            // Sample k is entry 8k of the published table (the last one entry 255), as t = k/32 indexes it.
            const int k = std::min(i / 8, sampleCount - 2);
            const int from = 8 * k, to = std::min(8 * (k + 1), 255);
            const double f = double(i - from) / double(to - from);
            const QColor a = QColor::fromRgb(QRgb(samples[size_t(k)]));
            const QColor b = QColor::fromRgb(QRgb(samples[size_t(k) + 1]));
            table[size_t(i)] = qRgb(toByte(a.red() + f * (b.red() - a.red())),
                toByte(a.green() + f * (b.green() - a.green())), toByte(a.blue() + f * (b.blue() - a.blue())));
        }
        return table;
    }

    // sRGB transfer function (IEC 61966-2-1).
    double srgbToLinear(double c) { return c <= 0.04045 ? c / 12.92 : std::pow((c + 0.055) / 1.055, 2.4); }
    double linearToSrgb(double c)
    {
        c = std::clamp(c, 0.0, 1.0);
        return c <= 0.0031308 ? 12.92 * c : 1.055 * std::pow(c, 1.0 / 2.4) - 0.055;
    }

    // CIE L* to relative luminance Y (CIE 1976).
    double lightnessToLuminance(double l)
    {
        const double fy = (l + 16.0) / 116.0;
        return l > 8.0 ? fy * fy * fy : l / 903.3;
    }

    // Greys: equal steps in L* from black to white, so equal data steps look equal.
    ColormapTable greys()
    {
        ColormapTable table {};
        for (int i = 0; i < 256; ++i) {
            const int g = toByte(255.0 * linearToSrgb(lightnessToLuminance(100.0 * i / 255.0)));
            table[size_t(i)] = qRgb(g, g, g);
        }
        return table;
    }

    // ---- Moreland, "Diverging Color Maps for Scientific Visualization" (ISVC 2009): interpolation in Msh, the polar
    // form of CIELAB, between a blue and a red of equal lightness through white.

    struct Lab {
        double l, a, b;
    };
    struct Msh {
        double m, s, h;
    };

    constexpr double whiteX = 0.9505, whiteY = 1.0, whiteZ = 1.0890; // D65, as in the paper

    double labF(double t) { return t > 0.008856 ? std::cbrt(t) : 7.787 * t + 16.0 / 116.0; }
    double labFInverse(double t) { return t > 0.206893 ? t * t * t : (t - 16.0 / 116.0) / 7.787; }

    Lab rgbToLab(QRgb rgb)
    {
        const double r = srgbToLinear(qRed(rgb) / 255.0), g = srgbToLinear(qGreen(rgb) / 255.0),
                     b = srgbToLinear(qBlue(rgb) / 255.0);
        const double x = 0.4124 * r + 0.3576 * g + 0.1805 * b;
        const double y = 0.2126 * r + 0.7152 * g + 0.0722 * b;
        const double z = 0.0193 * r + 0.1192 * g + 0.9505 * b;
        const double fx = labF(x / whiteX), fy = labF(y / whiteY), fz = labF(z / whiteZ);
        return { 116.0 * fy - 16.0, 500.0 * (fx - fy), 200.0 * (fy - fz) };
    }

    QRgb labToRgb(const Lab& lab)
    {
        const double fy = (lab.l + 16.0) / 116.0;
        const double x = whiteX * labFInverse(fy + lab.a / 500.0);
        const double y = whiteY * labFInverse(fy);
        const double z = whiteZ * labFInverse(fy - lab.b / 200.0);
        const double r = 3.2406 * x - 1.5372 * y - 0.4986 * z;
        const double g = -0.9689 * x + 1.8758 * y + 0.0415 * z;
        const double b = 0.0557 * x - 0.2040 * y + 1.0570 * z;
        return qRgb(toByte(255.0 * linearToSrgb(r)), toByte(255.0 * linearToSrgb(g)), toByte(255.0 * linearToSrgb(b)));
    }

    Msh labToMsh(const Lab& lab)
    {
        const double m = std::sqrt(lab.l * lab.l + lab.a * lab.a + lab.b * lab.b);
        return { m, m > 0 ? std::acos(lab.l / m) : 0.0, std::atan2(lab.b, lab.a) };
    }

    Lab mshToLab(const Msh& c)
    {
        return { c.m * std::cos(c.s), c.m * std::sin(c.s) * std::cos(c.h), c.m * std::sin(c.s) * std::sin(c.h) };
    }

    // The hue to give an unsaturated end so the path to a saturated colour does not swing through other hues.
    double adjustHue(const Msh& saturated, double unsaturatedM)
    {
        if (saturated.m >= unsaturatedM)
            return saturated.h;
        const double spin = saturated.s * std::sqrt(unsaturatedM * unsaturatedM - saturated.m * saturated.m)
            / (saturated.m * std::sin(saturated.s));
        return saturated.h > -M_PI / 3.0 ? saturated.h + spin : saturated.h - spin;
    }

    QRgb interpolateDiverging(QRgb low, QRgb high, double t)
    {
        Msh a = labToMsh(rgbToLab(low));
        Msh b = labToMsh(rgbToLab(high));
        if (a.s > 0.05 && b.s > 0.05 && std::abs(a.h - b.h) > M_PI / 3.0) {
            // Distinct saturated ends: pass through an unsaturated middle (white for M = 88, the paper's choice).
            const double mid = std::max({ a.m, b.m, 88.0 });
            if (t < 0.5) {
                b = { mid, 0.0, 0.0 };
                t *= 2.0;
            } else {
                a = { mid, 0.0, 0.0 };
                t = 2.0 * t - 1.0;
            }
        }
        if (a.s < 0.05 && b.s > 0.05)
            a.h = adjustHue(b, a.m);
        else if (b.s < 0.05 && a.s > 0.05)
            b.h = adjustHue(a, b.m);
        const Msh c { a.m + t * (b.m - a.m), a.s + t * (b.s - a.s), a.h + t * (b.h - a.h) };
        return labToRgb(mshToLab(c));
    }

    ColormapTable coolWarm()
    {
        ColormapTable table {};
        // The paper's end points (Table 1): sRGB (59, 76, 192) and (180, 4, 38).
        const QRgb cool = qRgb(59, 76, 192), warm = qRgb(180, 4, 38);
        for (int i = 0; i < 256; ++i)
            table[size_t(i)] = interpolateDiverging(cool, warm, i / 255.0);
        return table;
    }

    ColormapTable build(Colormap map)
    {
        switch (map) {
        case Colormap::Viridis:
            return fromSamples(viridisSamples);
        case Colormap::Magma:
            return fromSamples(magmaSamples);
        case Colormap::Inferno:
            return fromSamples(infernoSamples);
        case Colormap::Cividis:
            return fromSamples(cividisSamples);
        case Colormap::Greys:
            return greys();
        case Colormap::CoolWarm:
            return coolWarm();
        }
        return fromSamples(viridisSamples);
    }

} // namespace

std::vector<Colormap> allColormaps()
{
    return { Colormap::Viridis, Colormap::Magma, Colormap::Inferno, Colormap::Cividis, Colormap::Greys,
        Colormap::CoolWarm };
}

const ColormapTable& colormapTable(Colormap map)
{
    // Built on first use; function-local statics are initialised once, thread-safely.
    static const std::array<ColormapTable, 6> tables = [] {
        std::array<ColormapTable, 6> t {};
        for (Colormap m : allColormaps())
            t[size_t(m)] = build(m);
        return t;
    }();
    return tables[size_t(map)];
}

QRgb colormapColor(Colormap map, double t)
{
    if (!(t >= 0.0)) // NaN too
        t = 0.0;
    const int i = std::min(255, int(std::lround(t * 255.0)));
    return colormapTable(map)[size_t(i)];
}

QString colormapName(Colormap map)
{
    switch (map) {
    case Colormap::Viridis:
        return QStringLiteral("viridis");
    case Colormap::Magma:
        return QStringLiteral("magma");
    case Colormap::Inferno:
        return QStringLiteral("inferno");
    case Colormap::Cividis:
        return QStringLiteral("cividis");
    case Colormap::Greys:
        return QStringLiteral("greys");
    case Colormap::CoolWarm:
        return QStringLiteral("coolwarm");
    }
    return {};
}

std::optional<Colormap> colormapFromName(const QString& name)
{
    for (Colormap m : allColormaps()) {
        if (colormapName(m).compare(name, Qt::CaseInsensitive) == 0)
            return m;
    }
    return std::nullopt;
}

QCPColorGradient colorGradient(Colormap map)
{
    QCPColorGradient gradient;
    gradient.clearColorStops();
    const ColormapTable& table = colormapTable(map);
    for (int i = 0; i < 256; ++i)
        gradient.setColorStopAt(i / 255.0, QColor::fromRgb(table[size_t(i)]));
    gradient.setColorInterpolation(QCPColorGradient::ciRGB);
    gradient.setLevelCount(256);
    return gradient;
}

} // namespace attnscope
