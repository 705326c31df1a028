// Colormap tables: end points of the published maps, monotone lightness of the sequential ones, a white middle
// for the diverging one.

#include <plots/Colormap.h>
#include <QtTest>

using namespace attnscope;

namespace {

// Relative luminance (Rec. 709 weights on linearised sRGB): a proxy for lightness order.
double luminance(QRgb c)
{
    auto lin = [](int v) {
        const double s = v / 255.0;
        return s <= 0.04045 ? s / 12.92 : std::pow((s + 0.055) / 1.055, 2.4);
    };
    return 0.2126 * lin(qRed(c)) + 0.7152 * lin(qGreen(c)) + 0.0722 * lin(qBlue(c));
}

} // namespace

class ColormapTest : public QObject {
    Q_OBJECT

private slots:
    void publishedEndPoints()
    {
        // The first and last entries of the published tables (van der Walt & Smith 2015; Nuñez et al. 2018).
        QCOMPARE(colormapTable(Colormap::Viridis)[0], qRgb(0x44, 0x01, 0x54));
        QCOMPARE(colormapTable(Colormap::Viridis)[255], qRgb(0xfd, 0xe7, 0x25));
        QCOMPARE(colormapTable(Colormap::Magma)[0], qRgb(0x00, 0x00, 0x04));
        QCOMPARE(colormapTable(Colormap::Inferno)[255], qRgb(0xfc, 0xff, 0xa4));
        QCOMPARE(colormapTable(Colormap::Cividis)[0], qRgb(0x00, 0x22, 0x4e));
        // Viridis at 0.5 is the teal #21918c (entry 128 of the published table is #21918c as well).
        const QRgb mid = colormapTable(Colormap::Viridis)[128];
        QVERIFY(
            std::abs(qRed(mid) - 0x21) <= 2 && std::abs(qGreen(mid) - 0x91) <= 2 && std::abs(qBlue(mid) - 0x8c) <= 2);
    }

    void sequentialMapsGetLighter_data()
    {
        QTest::addColumn<int>("map");
        for (Colormap m : { Colormap::Viridis, Colormap::Magma, Colormap::Inferno, Colormap::Cividis, Colormap::Greys })
            QTest::newRow(qPrintable(colormapName(m))) << int(m);
    }

    void sequentialMapsGetLighter()
    {
        QFETCH(int, map);
        const ColormapTable& t = colormapTable(Colormap(map));
        for (int i = 8; i < 256; i += 8)
            QVERIFY2(luminance(t[size_t(i)]) > luminance(t[size_t(i - 8)]), qPrintable(QString::number(i)));
    }

    void greysSpanBlackToWhite()
    {
        QCOMPARE(colormapTable(Colormap::Greys)[0], qRgb(0, 0, 0));
        QCOMPARE(colormapTable(Colormap::Greys)[255], qRgb(255, 255, 255));
        // Equal steps in L*: the middle entry is L* = 50, i.e. sRGB ~119, not 128.
        QVERIFY(std::abs(qRed(colormapTable(Colormap::Greys)[128]) - 119) <= 2);
    }

    void coolWarmIsSymmetricAboutWhite()
    {
        const ColormapTable& t = colormapTable(Colormap::CoolWarm);
        // Moreland's end points, and a near-white middle (his M = 88 gives about (221, 221, 221)).
        QVERIFY(std::abs(qRed(t[0]) - 59) <= 1 && std::abs(qGreen(t[0]) - 76) <= 1 && std::abs(qBlue(t[0]) - 192) <= 1);
        QVERIFY(std::abs(qRed(t[255]) - 180) <= 1 && std::abs(qGreen(t[255]) - 4) <= 1
            && std::abs(qBlue(t[255]) - 38) <= 1);
        const QRgb mid = colormapColor(Colormap::CoolWarm, 0.5);
        QVERIFY2(qRed(mid) > 205 && qGreen(mid) > 205 && qBlue(mid) > 205, qPrintable(QColor(mid).name()));
        QVERIFY(qBlue(t[40]) > qRed(t[40]));
        QVERIFY(qRed(t[215]) > qBlue(t[215]));
        // Equal lightness at equal distance from the middle.
        QVERIFY(std::abs(luminance(t[64]) - luminance(t[191])) < 0.05);
    }

    void clampsAndNames()
    {
        QCOMPARE(colormapColor(Colormap::Viridis, -1.0), colormapTable(Colormap::Viridis)[0]);
        QCOMPARE(colormapColor(Colormap::Viridis, 7.0), colormapTable(Colormap::Viridis)[255]);
        QCOMPARE(colormapColor(Colormap::Viridis, std::nan("")), colormapTable(Colormap::Viridis)[0]);
        for (Colormap m : allColormaps())
            QCOMPARE(colormapFromName(colormapName(m).toUpper()), std::optional<Colormap>(m));
        QVERIFY(!colormapFromName("jet"));
    }
};

QObject* makeColormapTest() { return new ColormapTest; }

#include "ColormapTest.moc"
