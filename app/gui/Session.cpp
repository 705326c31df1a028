#include "gui/Session.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QSaveFile>

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
    if (path.startsWith(QLatin1String("builtin:")) || QFileInfo::exists(path))
        return path;
    const QString relative = entry.value("relative").toString();
    if (!relative.isEmpty() && QFileInfo::exists(QDir(folder).filePath(relative)))
        return QDir::cleanPath(QDir(folder).filePath(relative));
    return {};
}

QJsonObject modelEntry(const SessionModel& m, const QString& folder)
{
    QJsonObject o = fileEntry(m.path, folder);
    if (!m.description.isEmpty())
        o["description"] = fileEntry(m.description, folder);
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

std::optional<SessionModel> readModel(const QJsonValue& value, const QString& folder, const QString& what, QStringList* missing,
                                      QStringList* warnings)
{
    if (!value.isObject())
        return std::nullopt;
    const QJsonObject o = value.toObject();
    unknownKeys(o, { "path", "relative", "description", "input_size" }, what + ".", warnings);
    SessionModel m;
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
    const QJsonArray size = o.value("input_size").toArray();
    if (size.size() == 2) {
        m.inputHeight = size[0].toInt();
        m.inputWidth = size[1].toInt();
    }
    return m;
}

} // namespace

QJsonObject sessionToJson(const Session& s, const QString& folder)
{
    QJsonObject o { { "attnscope_session", kVersion } };
    if (s.model)
        o["model"] = modelEntry(*s.model, folder);
    if (s.compare)
        o["compare"] = modelEntry(*s.compare, folder);
    QJsonArray images;
    for (const QString& image : s.images)
        images.append(fileEntry(image, folder));
    o["images"] = images;
    o["selected"] = s.selected;
    o["query"] = s.query;
    o["layer"] = s.layer;
    o["head"] = s.head;
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

bool writeSession(const QString& path, const Session& session, QString* error)
{
    QSaveFile file(path);
    const QByteArray bytes = QJsonDocument(sessionToJson(session, QFileInfo(path).absolutePath())).toJson(QJsonDocument::Indented);
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
    unknownKeys(o, { "attnscope_session", "model", "compare", "images", "selected", "query", "layer", "head", "variant", "perturbation",
                     "drawing", "figures", "dock_layout" },
                {}, warnings);
    const QString folder = QFileInfo(path).absolutePath();
    Session s;
    s.model = readModel(o.value("model"), folder, QObject::tr("model"), missing, warnings);
    s.compare = readModel(o.value("compare"), folder, QObject::tr("compared model"), missing, warnings);
    const QJsonArray images = o.value("images").toArray();
    const int selected = o.value("selected").toInt(-1);
    for (int i = 0; i < images.size(); ++i) {
        const QString image = resolve(images[i].toObject(), folder);
        if (image.isEmpty()) {
            *missing << QObject::tr("image %1").arg(images[i].toObject().value("path").toString());
            continue;
        }
        if (i == selected)
            s.selected = int(s.images.size());
        s.images << image;
    }
    s.query = o.value("query").toInt(0);
    s.layer = o.value("layer").toInt(1);
    s.head = o.value("head").toInt(-1);
    if (o.value("variant").isObject()) {
        const QJsonObject v = o.value("variant").toObject();
        s.neutrenoLambda = v.value("neutreno_lambda").toDouble();
        s.boostT = v.value("boost_t").toDouble();
    }
    s.perturbation = o.value("perturbation").toString();
    s.drawing = o.value("drawing").toObject();
    s.imageFigure = o.value("figures").toObject().value("image").toString();
    s.setFigure = o.value("figures").toObject().value("set").toString();
    s.dockLayout = QByteArray::fromBase64(o.value("dock_layout").toString().toLatin1());
    return s;
}
