#include "gui/Session.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QSaveFile>

#include <cmath>

namespace {

constexpr int kVersion = 1;

QJsonObject fileEntry(const QString& path, const QString& folder)
{
    if (path.startsWith(QLatin1String("builtin:")))
        return { { "path", path } };
    const QString absolute = QDir::cleanPath(QFileInfo(path).absoluteFilePath());
    return { { "path", absolute }, { "relative", QDir(folder).relativeFilePath(absolute) } };
}

// The file of an entry as it is now: its absolute path, else its relative one from `folder`; "" when neither exists.
QString resolve(const QJsonObject& entry, const QString& folder)
{
    const QString path = entry.value("path").toString();
    if (path.startsWith(QLatin1String("builtin:")) || QFileInfo::exists(path) || entry.value("on_host").toBool())
        return path; // a host's path is the host's to find
    const QString relative = entry.value("relative").toString();
    if (!relative.isEmpty() && QFileInfo::exists(QDir(folder).filePath(relative)))
        return QDir::cleanPath(QDir(folder).filePath(relative));
    return {};
}

// A remote session's file that this machine has not is the host's: kept as it was given, found there.
QJsonObject entryFor(const QString& path, const QString& folder, bool remote)
{
    if (remote && !path.startsWith(QLatin1String("builtin:")) && !QFileInfo::exists(path))
        return { { "path", path }, { "on_host", true } };
    return fileEntry(path, folder);
}

QJsonObject modelEntry(const ModelState& m, const QString& folder, bool remote)
{
    QJsonObject o = entryFor(m.path, folder, remote);
    if (!m.description.isEmpty())
        o["description"] = entryFor(m.description, folder, remote);
    if (m.inputHeight > 0 && m.inputWidth > 0)
        o["input_size"] = QJsonArray { m.inputHeight, m.inputWidth };
    return o;
}

void unknownKeys(const QJsonObject& o, const QStringList& known, const QString& where, QStringList* warnings)
{
    for (const QString& key : o.keys())
        if (!known.contains(key) && warnings)
            *warnings << QObject::tr("unknown key %1%2 (ignored)").arg(where, key);
}

// A value as the file spells it, for a message: "three" quoted, 42, an object or a list in short.
QString spelled(const QJsonValue& v)
{
    if (v.isString())
        return QStringLiteral("\"%1\"").arg(v.toString().left(60));
    if (v.isObject())
        return QObject::tr("an object");
    if (v.isArray())
        return QObject::tr("a list");
    if (v.isBool())
        return v.toBool() ? QStringLiteral("true") : QStringLiteral("false");
    if (v.isNull())
        return QStringLiteral("null");
    return v.toVariant().toString();
}

void wrongType(QStringList* warnings, const QString& key, const QJsonValue& v, const QString& expected, const QString& kept)
{
    if (warnings)
        *warnings << QObject::tr("%1: %2 is not %3 (%4)").arg(key, spelled(v), expected, kept);
}

// The typed readers of a key: absent gives the default without a word; a value of another type gives it too, and
// says so field by field, so that one wrong field never costs the others.
int wholeNumber(const QJsonObject& o, const QString& key, int fallback, QStringList* warnings)
{
    const QJsonValue v = o.value(key);
    if (v.isUndefined())
        return fallback;
    const double d = v.toDouble();
    if (!v.isDouble() || d != std::floor(d) || std::fabs(d) > 1e9) {
        wrongType(warnings, key, v, QObject::tr("a whole number"), QObject::tr("%1 used").arg(fallback));
        return fallback;
    }
    return int(d);
}

QString text(const QJsonObject& o, const QString& key, QStringList* warnings, const QString& where = {})
{
    const QJsonValue v = o.value(key);
    if (v.isUndefined())
        return {};
    if (!v.isString()) {
        wrongType(warnings, where + key, v, QObject::tr("a string"), QObject::tr("ignored"));
        return {};
    }
    return v.toString();
}

QJsonObject object(const QJsonObject& o, const QString& key, QStringList* warnings)
{
    const QJsonValue v = o.value(key);
    if (v.isUndefined())
        return {};
    if (!v.isObject()) {
        wrongType(warnings, key, v, QObject::tr("an object"), QObject::tr("ignored"));
        return {};
    }
    return v.toObject();
}

std::optional<ModelState> readModel(const QJsonValue& value, const QString& folder, const QString& what, QStringList* missing,
                                      QStringList* warnings)
{
    if (value.isUndefined())
        return std::nullopt;
    if (!value.isObject() || !value.toObject().value("path").isString()) {
        wrongType(warnings, what, value, QObject::tr("a model entry with a \"path\""), QObject::tr("no %1 opened").arg(what));
        return std::nullopt;
    }
    const QJsonObject o = value.toObject();
    unknownKeys(o, { "path", "relative", "on_host", "description", "input_size" }, what + ".", warnings);
    ModelState m;
    m.path = resolve(o, folder);
    if (m.path.isEmpty()) {
        *missing << QObject::tr("%1 %2").arg(what, o.value("path").toString());
        return std::nullopt;
    }
    if (o.contains("description")) {
        m.description = resolve(o.value("description").toObject(), folder);
        if (m.description.isEmpty()) {
            *missing << QObject::tr("%1's description %2").arg(what, o.value("description").toObject().value("path").toString());
            return std::nullopt;
        }
    }
    if (const QJsonValue size = o.value("input_size"); !size.isUndefined()) {
        const QJsonArray a = size.toArray();
        if (a.size() == 2 && a[0].toInt() > 0 && a[1].toInt() > 0) {
            m.inputHeight = a[0].toInt();
            m.inputWidth = a[1].toInt();
        } else {
            wrongType(warnings, what + QStringLiteral(".input_size"), size, QObject::tr("[height, width] in pixels"),
                      QObject::tr("the size it was trained for used"));
        }
    }
    return m;
}

// The view selection. What only the model can check (a layer or head it has) is checked when the state is applied.
ViewSelection readView(const QJsonObject& o, QStringList* warnings)
{
    ViewSelection v;
    v.query = wholeNumber(o, QStringLiteral("query"), 0, warnings);
    v.layer = wholeNumber(o, QStringLiteral("layer"), 1, warnings);
    const int head = wholeNumber(o, QStringLiteral("head"), -1, warnings);
    if (const auto choice = headFromNumber(head))
        v.head = *choice;
    else if (warnings)
        *warnings << QObject::tr("head: %1 is neither a head (0, 1, ...) nor a view -1 to -5 (the mean of heads shown)").arg(head);
    const QJsonObject rollout = object(o, QStringLiteral("rollout"), warnings);
    if (const QString fusion = text(rollout, QStringLiteral("fusion"), warnings, QStringLiteral("rollout.")); !fusion.isEmpty()) {
        if (auto f = attnscope::parseHeadFusion(fusion.toStdString()))
            v.rollout.fusion = *f;
        else if (warnings)
            *warnings << QObject::tr("rollout.fusion: \"%1\" is not mean, max or min (mean used)").arg(fusion.left(60));
    }
    if (const QJsonValue discard = rollout.value("discard"); !discard.isUndefined()) {
        if (discard.isDouble() && discard.toDouble() >= 0 && discard.toDouble() < 1)
            v.rollout.discard = discard.toDouble();
        else
            wrongType(warnings, QStringLiteral("rollout.discard"), discard, QObject::tr("a share from 0 to below 1"), QObject::tr("0 used"));
    }
    unknownKeys(rollout, { "fusion", "discard" }, QStringLiteral("rollout."), warnings);
    v.relevanceClass = wholeNumber(o, QStringLiteral("relevance_class"), -1, warnings);
    if (v.relevanceClass < -1) {
        if (warnings)
            *warnings << QObject::tr("relevance_class: %1 is no class (the predicted class used)").arg(v.relevanceClass);
        v.relevanceClass = -1;
    }
    return v;
}

} // namespace

QJsonObject sessionToJson(const WindowState& s, const QString& folder)
{
    QJsonObject o { { "attnscope_session", kVersion } };
    const bool remote = !s.remote.isEmpty();
    if (remote)
        o["remote"] = s.remote;
    if (s.model)
        o["model"] = modelEntry(*s.model, folder, remote);
    if (s.compare)
        o["compare"] = modelEntry(*s.compare, folder, remote);
    QJsonArray images;
    for (const QString& image : s.images)
        images.append(fileEntry(image, folder));
    o["images"] = images;
    o["selected"] = s.selected;
    o["query"] = s.view.query;
    o["layer"] = s.view.layer;
    o["head"] = headNumber(s.view.head);
    o["rollout"] = QJsonObject { { "fusion", QString::fromLatin1(toString(s.view.rollout.fusion)) }, { "discard", s.view.rollout.discard } };
    o["relevance_class"] = s.view.relevanceClass;
    if (s.neutrenoLambda && s.boostT)
        o["variant"] = QJsonObject { { "neutreno_lambda", *s.neutrenoLambda }, { "boost_t", *s.boostT } };
    if (!s.perturbation.isEmpty())
        o["perturbation"] = s.perturbation;
    if (!s.drawing.isEmpty())
        o["drawing"] = s.drawing;
    o["figures"] = QJsonObject { { "image", s.imageFigure }, { "set", s.setFigure } };
    if (!s.dockLayout.isEmpty())
        o["dock_layout"] = QString::fromLatin1(s.dockLayout.toBase64());
    return o;
}

bool writeSession(const QString& path, const WindowState& state, QString* error)
{
    QSaveFile file(path);
    const QByteArray bytes = QJsonDocument(sessionToJson(state, QFileInfo(path).absolutePath())).toJson(QJsonDocument::Indented);
    if (!file.open(QIODevice::WriteOnly) || file.write(bytes) != bytes.size() || !file.commit()) {
        *error = QObject::tr("%1: cannot write the session (%2)").arg(path, file.errorString());
        return false;
    }
    return true;
}

std::optional<Session> readSession(const QString& path, QString* error, QStringList* missing, QStringList* warnings)
{
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly)) {
        *error = QObject::tr("%1: cannot read (%2)").arg(path, file.errorString());
        return std::nullopt;
    }
    if (file.size() > 64 * 1024 * 1024) {
        *error = QObject::tr("%1: %2 bytes is no session (at most 64 MiB)").arg(path).arg(file.size());
        return std::nullopt;
    }
    QJsonParseError parse;
    const QJsonDocument json = QJsonDocument::fromJson(file.readAll(), &parse);
    if (parse.error != QJsonParseError::NoError) {
        *error = QObject::tr("%1: not JSON (%2 at byte %3)").arg(path, parse.errorString()).arg(parse.offset);
        return std::nullopt;
    }
    const QJsonObject o = json.object();
    if (!json.isObject() || !o.contains("attnscope_session")) {
        *error = QObject::tr("%1: not an attnscope session (no \"attnscope_session\" key)").arg(path);
        return std::nullopt;
    }
    if (o.value("attnscope_session").toInt() != kVersion) {
        *error = QObject::tr("%1: session version %2; this attnscope reads version %3")
                     .arg(path, o.value("attnscope_session").toVariant().toString())
                     .arg(kVersion);
        return std::nullopt;
    }
    unknownKeys(o, { "attnscope_session", "remote", "model", "compare", "images", "selected", "query", "layer", "head", "rollout", "relevance_class",
                     "variant", "perturbation", "drawing", "figures", "dock_layout" },
                {}, warnings);
    const QString folder = QFileInfo(path).absolutePath();
    Session session;
    session.file = path;
    WindowState& s = session.state;
    s.remote = text(o, QStringLiteral("remote"), warnings);
    s.model = readModel(o.value("model"), folder, QObject::tr("model"), missing, warnings);
    s.compare = readModel(o.value("compare"), folder, QObject::tr("compared model"), missing, warnings);
    QJsonArray images;
    if (const QJsonValue v = o.value("images"); v.isArray())
        images = v.toArray();
    else if (!v.isUndefined())
        wrongType(warnings, QStringLiteral("images"), v, QObject::tr("a list"), QObject::tr("no images opened"));
    const int selected = wholeNumber(o, QStringLiteral("selected"), -1, warnings);
    if ((selected < -1 || selected >= images.size()) && warnings)
        *warnings << QObject::tr("selected: %1 is not an image of the %n listed (the first selected)", nullptr, int(images.size())).arg(selected);
    for (int i = 0; i < images.size(); ++i) {
        if (!images[i].isObject() || !images[i].toObject().value("path").isString()) {
            wrongType(warnings, QStringLiteral("images[%1]").arg(i), images[i], QObject::tr("an image entry with a \"path\""),
                      QObject::tr("left out"));
            continue;
        }
        const QString image = resolve(images[i].toObject(), folder);
        if (image.isEmpty()) {
            *missing << QObject::tr("image %1").arg(images[i].toObject().value("path").toString());
            continue;
        }
        if (i == selected)
            s.selected = int(s.images.size());
        s.images << image;
    }
    s.view = readView(o, warnings);
    if (const QJsonObject v = object(o, QStringLiteral("variant"), warnings); !v.isEmpty()) {
        if (v.value("neutreno_lambda").isDouble() && v.value("boost_t").isDouble()) {
            s.neutrenoLambda = v.value("neutreno_lambda").toDouble();
            s.boostT = v.value("boost_t").toDouble();
        } else {
            wrongType(warnings, QStringLiteral("variant"), o.value("variant"), QObject::tr("{\"neutreno_lambda\": number, \"boost_t\": number}"),
                      QObject::tr("no variant run"));
        }
    }
    s.perturbation = text(o, QStringLiteral("perturbation"), warnings);
    s.drawing = object(o, QStringLiteral("drawing"), warnings);
    const QJsonObject figures = object(o, QStringLiteral("figures"), warnings);
    s.imageFigure = text(figures, QStringLiteral("image"), warnings, QStringLiteral("figures."));
    s.setFigure = text(figures, QStringLiteral("set"), warnings, QStringLiteral("figures."));
    s.dockLayout = QByteArray::fromBase64(text(o, QStringLiteral("dock_layout"), warnings).toLatin1());
    return session;
}
