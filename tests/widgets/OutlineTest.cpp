// levelSetOutline: the 50% regions of the head-centre figure are outlines of offset-map cells.

#include <plots/HeadCentresPlot.h>
#include <QtTest>

using namespace attnscope;

namespace {

// A (2R+1)^2 map with 1 at the listed (dy, dx) cells and 0 elsewhere.
std::vector<double> cells(int radius, std::initializer_list<std::pair<int, int>> on)
{
    const int n = 2 * radius + 1;
    std::vector<double> map(size_t(n * n), 0.0);
    for (auto [dy, dx] : on)
        map[size_t((dy + radius) * n + dx + radius)] = 1.0;
    return map;
}

double area(const QPolygonF& p)
{
    double a = 0;
    for (int i = 0; i + 1 < p.size(); ++i)
        a += p[i].x() * p[i + 1].y() - p[i + 1].x() * p[i].y();
    return a / 2;
}

} // namespace

class OutlineTest : public QObject {
    Q_OBJECT

private slots:
    void singleCellIsAUnitSquare()
    {
        const auto polygons = levelSetOutline(cells(3, { { 0, 0 } }), 3, 0.5);
        QCOMPARE(polygons.size(), size_t(1));
        const QPolygonF& p = polygons.front();
        QCOMPARE(p.size(), 5); // four corners, closed
        QCOMPARE(p.front(), p.back());
        QCOMPARE(p.boundingRect(), QRectF(-0.5, -0.5, 1.0, 1.0));
        QCOMPARE(std::abs(area(p)), 1.0);
    }

    void offsetsFollowRowsAndColumns()
    {
        // Row dy = -2 (two above the query), column dx = +1.
        const auto polygons = levelSetOutline(cells(3, { { -2, 1 } }), 3, 0.5);
        QCOMPARE(polygons.size(), size_t(1));
        QCOMPARE(polygons.front().boundingRect(), QRectF(0.5, -2.5, 1.0, 1.0));
    }

    void lShapeHasSixCorners()
    {
        const auto polygons = levelSetOutline(cells(2, { { 0, 0 }, { 0, 1 }, { 1, 0 } }), 2, 0.5);
        QCOMPARE(polygons.size(), size_t(1));
        QCOMPARE(polygons.front().size(), 7);
        QCOMPARE(std::abs(area(polygons.front())), 3.0);
    }

    void diagonalNeighboursStayApart()
    {
        const auto polygons = levelSetOutline(cells(2, { { 0, 0 }, { 1, 1 } }), 2, 0.5);
        QCOMPARE(polygons.size(), size_t(2));
        for (const auto& p : polygons)
            QCOMPARE(std::abs(area(p)), 1.0);
    }

    void ringHasAHole()
    {
        const auto polygons = levelSetOutline(
            cells(1, { { -1, -1 }, { -1, 0 }, { -1, 1 }, { 0, -1 }, { 0, 1 }, { 1, -1 }, { 1, 0 }, { 1, 1 } }), 1, 0.5);
        QCOMPARE(polygons.size(), size_t(2));
        // Outer boundary and hole wind in opposite senses; their signed areas add up to the ring's 8 cells.
        QCOMPARE(std::abs(area(polygons[0]) + area(polygons[1])), 8.0);
    }

    void insetShrinksInwards()
    {
        const auto polygons = levelSetOutline(cells(3, { { 0, 0 }, { 0, 1 } }), 3, 0.5, 0.1);
        QCOMPARE(polygons.size(), size_t(1));
        const QRectF box = polygons.front().boundingRect();
        QVERIFY(qFuzzyCompare(box.left(), -0.4));
        QVERIFY(qFuzzyCompare(box.right(), 1.4));
        QVERIFY(qFuzzyCompare(box.top(), -0.4));
        QVERIFY(qFuzzyCompare(box.bottom(), 0.4));
    }

    void badInputGivesNothing()
    {
        QVERIFY(levelSetOutline({ 1.0, 2.0 }, 3, 0.5).empty());
        QVERIFY(levelSetOutline(cells(3, {}), 3, 0.5).empty());
    }
};

QObject* makeOutlineTest() { return new OutlineTest; }

#include "OutlineTest.moc"
