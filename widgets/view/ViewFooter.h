#pragma once

#include <attnscope/Model.h>

#include <QString>
#include <QStringList>
#include <QWidget>

#include <string>
#include <vector>

class QLabel;

namespace attnscope {

// A class as the model names it ("cat"), or "class 3" when it names none.
QString className(const QStringList& labels, int index);
QString className(const std::vector<std::string>& labels, int index);

// The lines under an attention view: what preprocessing did to the image ("converted to grey, resized 512×512 → 28×28")
// and the model's five most probable classes for it, named when the model has class names, with those of its variant
// when one runs. Cleared with the image, so that it never speaks of an image no longer shown.
class ViewFooter : public QWidget {
    Q_OBJECT
public:
    struct Entry {
        int index = 0;
        QString name;
        double probability = 0;
    };

    explicit ViewFooter(QWidget* parent = nullptr);

    // `line`: Model::describePreparation's; "" when the image is what the model sees (then `input` says so: "28×28 grey").
    void setPreparation(const QString& line, const QString& input);
    // The top classes of the image (and of its variant, titled, when `variantTop` is not empty). `labels`: the model's
    // class names (empty: "class 3").
    void setPrediction(const std::vector<ClassProbability>& top, const QStringList& labels, const QString& variantTitle = {},
                       const std::vector<ClassProbability>& variantTop = {});
    // No prediction to show: the model has no classification head, or the image could not be run.
    void setNoPrediction(const QString& reason);
    // A head ablated on the image and what it does to the prediction (one line; "" hides it).
    void setAblation(const QString& text);
    void clear(); // no image

    QString preparationText() const;
    QString predictionText() const; // as shown, without markup
    QString ablationText() const;
    const std::vector<Entry>& entries() const { return m_entries; }
    const std::vector<Entry>& variantEntries() const { return m_variantEntries; }

private:
    QLabel* m_preparation = nullptr;
    QLabel* m_prediction = nullptr;
    QLabel* m_ablation = nullptr;
    std::vector<Entry> m_entries, m_variantEntries;
};

} // namespace attnscope
