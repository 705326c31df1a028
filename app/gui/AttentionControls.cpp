#include "gui/AttentionControls.h"

#include <QLineEdit>

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QJsonObject>
#include <QSettings>
#include <QSignalBlocker>
#include <QSlider>
#include <QSpinBox>
#include <QTimer>

#include <algorithm>
#include <cmath>

using namespace attnscope;

namespace {

struct NoiseKind {
    Perturbation::Kind kind;
    const char* title;
    const char* strengthName; // as Perturbation::parse spells it
    double low, high, step, initial;
    int decimals;
};

const NoiseKind kNoiseKinds[] = {
    { Perturbation::Kind::Gaussian, QT_TRANSLATE_NOOP("AttentionControls", "Gaussian noise, σ (of 255)"), "sigma", 0.5, 128, 1, 8, 1 },
    { Perturbation::Kind::SaltPepper, QT_TRANSLATE_NOOP("AttentionControls", "Salt and pepper, fraction"), "fraction", 0.001, 0.5, 0.01, 0.05, 3 },
    { Perturbation::Kind::Blur, QT_TRANSLATE_NOOP("AttentionControls", "Gaussian blur, σ (px)"), "sigma", 0.1, 10, 0.25, 1.5, 2 },
    { Perturbation::Kind::Jpeg, QT_TRANSLATE_NOOP("AttentionControls", "JPEG, quality"), "quality", 1, 100, 5, 30, 0 },
    { Perturbation::Kind::Fgsm, QT_TRANSLATE_NOOP("AttentionControls", "FGSM, ε (of 255)"), "eps", 0.25, 32, 0.5, 2, 2 },
    { Perturbation::Kind::Pgd, QT_TRANSLATE_NOOP("AttentionControls", "PGD (20 steps), ε (of 255)"), "eps", 0.25, 32, 0.5, 2, 2 },
};

// The variant boxes' tooltips: what each variant does.
QString variantTip(bool neutreno)
{
    return neutreno ? AttentionControls::tr("NeuTRENO: O = A V + λ (V₁ − V)") : AttentionControls::tr("Boost: R = U + t X₀ + (1 − t) X");
}

const NoiseKind& noiseKind(int index) { return kNoiseKinds[std::clamp(index, 0, int(std::size(kNoiseKinds)) - 1)]; }

// Layers by number; the one after the last, when the model has an attention-pool head, as "pool".
class LayerSpinBox : public QSpinBox {
public:
    using QSpinBox::QSpinBox;
    int poolLayer = 0; // 0: none

protected:
    QString textFromValue(int value) const override
    {
        return poolLayer > 0 && value == poolLayer ? AttentionControls::tr("pool") : QSpinBox::textFromValue(value);
    }
    int valueFromText(const QString& text) const override
    {
        return poolLayer > 0 && text.trimmed().startsWith(QLatin1String("p")) ? poolLayer : QSpinBox::valueFromText(text);
    }
    QValidator::State validate(QString& text, int& pos) const override
    {
        if (poolLayer > 0 && QStringLiteral("pool").startsWith(text.trimmed()) && !text.trimmed().isEmpty())
            return text.trimmed() == QLatin1String("pool") ? QValidator::Acceptable : QValidator::Intermediate;
        return QSpinBox::validate(text, pos);
    }
};

} // namespace

AttentionControls::AttentionControls(QWidget* parent)
    : QWidget(parent)
{
    auto* layout = new QFormLayout(this);
    m_layer = new LayerSpinBox(this);
    m_layer->setRange(1, 1);
    m_layer->setAccessibleName(tr("Layer"));
    connect(m_layer, &QSpinBox::valueChanged, this, &AttentionControls::layerChanged);
    m_head = new QComboBox(this);
    m_head->setAccessibleName(tr("Head"));
    connect(m_head, &QComboBox::currentIndexChanged, this, [this] { emit headChanged(head()); });
    m_opacity = new QSlider(Qt::Horizontal, this);
    m_opacity->setRange(0, 100);
    m_opacity->setValue(60);
    connect(m_opacity, &QSlider::valueChanged, this, [this](int v) { emit opacityChanged(v / 100.0); });
    m_colormap = new QComboBox(this);
    for (auto c : allColormaps())
        m_colormap->addItem(colormapName(c));
    connect(m_colormap, &QComboBox::currentTextChanged, this, [this](const QString& name) {
        if (auto c = colormapFromName(name))
            emit colormapChanged(*c);
    });
    m_grid = new QCheckBox(tr("patch grid"), this);
    connect(m_grid, &QCheckBox::toggled, this, &AttentionControls::gridToggled);
    m_query = new QLabel(this);
    m_query->setWordWrap(true);
    // The rollout's options (vit-explain's): how the heads of a layer are fused, and which share of the fused map,
    // lowest first, is dropped before the layers are chained. Used while "rollout" is the head shown.
    m_fusion = new QComboBox(this);
    m_fusion->setAccessibleName(tr("Rollout head fusion"));
    for (HeadFusion f : { HeadFusion::Mean, HeadFusion::Max, HeadFusion::Min })
        m_fusion->addItem(tr("%1 of heads").arg(QString::fromLatin1(toString(f))), int(f));
    m_discard = new QDoubleSpinBox(this);
    m_discard->setAccessibleName(tr("Rollout discard share"));
    m_discard->setRange(0.0, 0.99);
    m_discard->setSingleStep(0.05);
    m_discard->setDecimals(2);
    m_discard->setPrefix(tr("discard "));
    m_discard->setToolTip(tr("Share of each layer's fused attention set to zero, lowest values first, before the rollout"));
    connect(m_fusion, &QComboBox::currentIndexChanged, this, &AttentionControls::rolloutChanged);
    connect(m_discard, &QDoubleSpinBox::valueChanged, this, &AttentionControls::rolloutChanged);
    auto* rolloutRow = new QHBoxLayout;
    rolloutRow->addWidget(m_fusion, 1);
    rolloutRow->addWidget(m_discard, 1);
    const auto enableRollout = [this] {
        m_fusion->setEnabled(head().view == HeadView::Rollout);
        m_discard->setEnabled(head().view == HeadView::Rollout);
    };
    connect(m_head, &QComboBox::currentIndexChanged, this, enableRollout);
    enableRollout();
    // The class the relevance views explain (Chefer et al.'s GAE and Grad-CAM, computed on the worker).
    m_class = new QComboBox(this);
    m_class->setAccessibleName(tr("Relevance class"));
    m_class->setToolTip(tr("The class whose logit the relevance views explain"));
    m_class->addItem(tr("predicted class"), -1);
    connect(m_class, &QComboBox::currentIndexChanged, this, &AttentionControls::relevanceChanged);
    connect(m_head, &QComboBox::currentIndexChanged, this, [this] { m_class->setEnabled(head().isRelevance()); });
    m_class->setEnabled(false);
    layout->addRow(tr("Layer"), m_layer);
    layout->addRow(tr("Head"), m_head);
    layout->addRow(tr("Rollout"), rolloutRow);
    layout->addRow(tr("Class"), m_class);
    // Another input size (DINOv2 at 448 x 224, say): the model is loaded again with its position table resampled.
    m_inputSize = new QLineEdit(this);
    m_inputSize->setAccessibleName(tr("Input size"));
    m_inputSize->setToolTip(tr("Run the model at another input size: H,W or N (pixels, multiples of the patch); empty: as trained"));
    connect(m_inputSize, &QLineEdit::editingFinished, this, [this] {
        const QString text = m_inputSize->text().trimmed();
        const QStringList parts = text.split(QLatin1Char(','));
        bool okH = true, okW = true;
        const int h = text.isEmpty() ? 0 : parts.value(0).trimmed().toInt(&okH);
        const int w = text.isEmpty() ? 0 : parts.size() == 1 ? h : parts.value(1).trimmed().toInt(&okW);
        const bool valid = okH && okW && parts.size() <= 2 && h >= 0 && w >= 0 && (h == 0) == (w == 0);
        m_inputSize->setStyleSheet(valid ? QString() : QStringLiteral("color: #c0392b"));
        if (valid)
            emit inputSizeChanged(h, w);
    });
    layout->addRow(tr("Input size"), m_inputSize);
    layout->addRow(tr("Opacity"), m_opacity);
    layout->addRow(tr("Colour map"), m_colormap);
    layout->addRow(QString(), m_grid);
    layout->addRow(tr("Query"), m_query);

    m_variantPause = new QTimer(this);
    m_variantPause->setSingleShot(true);
    m_variantPause->setInterval(350);
    connect(m_variantPause, &QTimer::timeout, this, &AttentionControls::variantChanged);
    m_noisePause = new QTimer(this);
    m_noisePause->setSingleShot(true);
    m_noisePause->setInterval(350);
    connect(m_noisePause, &QTimer::timeout, this, &AttentionControls::perturbationChanged);

    // A short title: a group box is at least as wide as its title, and the dock is narrow on a 1280-pixel screen.
    auto* variantBox = new QGroupBox(tr("Variant and noise"), this);
    variantBox->setToolTip(tr("Changing these reruns the model in the background"));
    auto* variantForm = new QFormLayout(variantBox);
    m_lambda = new QDoubleSpinBox(variantBox);
    m_lambda->setRange(-2, 2);
    m_lambda->setSingleStep(0.1);
    m_lambda->setToolTip(variantTip(true));
    m_boost = new QDoubleSpinBox(variantBox);
    m_boost->setRange(0, 1);
    m_boost->setSingleStep(0.1);
    m_boost->setToolTip(variantTip(false));
    for (auto* box : { m_lambda, m_boost })
        connect(box, &QDoubleSpinBox::valueChanged, m_variantPause, qOverload<>(&QTimer::start));
    auto* reset = new QPushButton(tr("As trained"), variantBox);
    reset->setToolTip(tr("Back to the model's own values: no variant"));
    connect(reset, &QPushButton::clicked, this, [this] { setVariantValues(m_trainedLambda, m_trainedBoost); });
    m_noiseKind = new QComboBox(variantBox);
    for (const auto& k : kNoiseKinds)
        m_noiseKind->addItem(tr(k.title));
    m_noiseKind->setToolTip(tr("The perturbation of the SNR curves (docs/analyses.md section 4)"));
    m_noiseStrength = new QDoubleSpinBox(variantBox);
    connect(m_noiseKind, &QComboBox::currentIndexChanged, this, [this](int index) {
        const NoiseKind& k = noiseKind(index);
        m_noiseStrength->blockSignals(true);
        m_noiseStrength->setDecimals(k.decimals);
        m_noiseStrength->setRange(k.low, k.high);
        m_noiseStrength->setSingleStep(k.step);
        m_noiseStrength->setValue(k.initial);
        m_noiseStrength->blockSignals(false);
        m_noisePause->start();
    });
    connect(m_noiseStrength, &QDoubleSpinBox::valueChanged, m_noisePause, qOverload<>(&QTimer::start));
    m_noiseKind->setCurrentIndex(-1);
    m_noiseKind->setCurrentIndex(0);
    m_noisePause->stop(); // the initial value is not an edit
    variantForm->addRow(tr("NeuTRENO λ"), m_lambda);
    variantForm->addRow(tr("Boost t"), m_boost);
    variantForm->addRow(QString(), reset);
    variantForm->addRow(tr("SNR noise"), m_noiseKind);
    variantForm->addRow(tr("Strength"), m_noiseStrength);
    layout->addRow(variantBox);
    // Combo boxes as wide as the dock allows rather than as their longest item: no horizontal scroll bar in the dock.
    for (auto* combo : { m_head, m_colormap, m_noiseKind }) {
        combo->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
        combo->setMinimumContentsLength(8);
    }

    // How maps are drawn persists; what is computed (variant, noise) starts from the model each time.
    QSettings settings;
    m_opacity->setValue(settings.value("view/opacity", 60).toInt());
    m_colormap->setCurrentText(settings.value("view/colormap", colormapName(Colormap::Viridis)).toString());
    m_grid->setChecked(settings.value("view/grid", false).toBool());
    connect(m_opacity, &QSlider::valueChanged, this, [](int v) { QSettings().setValue("view/opacity", v); });
    connect(m_colormap, &QComboBox::currentTextChanged, this, [](const QString& v) { QSettings().setValue("view/colormap", v); });
    connect(m_grid, &QCheckBox::toggled, this, [](bool v) { QSettings().setValue("view/grid", v); });
}

QJsonObject AttentionControls::drawing() const
{
    return { { "opacity", m_opacity->value() / 100.0 }, { "colormap", m_colormap->currentText() }, { "grid", m_grid->isChecked() } };
}

void AttentionControls::setDrawing(const QJsonObject& drawing)
{
    if (drawing.value("opacity").isDouble())
        m_opacity->setValue(int(std::lround(std::clamp(drawing.value("opacity").toDouble(), 0.0, 1.0) * 100)));
    if (colormapFromName(drawing.value("colormap").toString()))
        m_colormap->setCurrentText(drawing.value("colormap").toString());
    if (drawing.value("grid").isBool())
        m_grid->setChecked(drawing.value("grid").toBool());
}

void AttentionControls::announce()
{
    emit opacityChanged(m_opacity->value() / 100.0);
    if (auto c = colormapFromName(m_colormap->currentText()))
        emit colormapChanged(*c);
    emit gridToggled(m_grid->isChecked());
}

void AttentionControls::setModel(int depth, int heads, double trainedLambda, double trainedBoost, bool pool, bool variants)
{
    for (QDoubleSpinBox* box : { m_lambda, m_boost }) {
        box->setEnabled(variants);
        box->setToolTip(variants ? variantTip(box == m_lambda)
                                 : tr("Not of a Swin: its windows and merges have no single V₁ or X₀ to mix in"));
    }
    m_layer->blockSignals(true);
    static_cast<LayerSpinBox*>(m_layer)->poolLayer = pool ? depth + 1 : 0;
    m_layer->setRange(1, pool ? depth + 1 : depth);
    m_layer->setValue(depth);
    m_layer->blockSignals(false);
    m_head->blockSignals(true);
    m_head->clear();
    for (HeadView v : kNamedHeadViews)
        m_head->addItem(headChoiceText(v), headNumber(v));
    for (int h = 0; h < heads; ++h)
        m_head->addItem(headChoiceText(HeadChoice::single(h)), h);
    m_head->blockSignals(false);
    m_trainedLambda = trainedLambda;
    m_trainedBoost = trainedBoost;
    for (auto [box, value] : { std::pair { m_lambda, trainedLambda }, { m_boost, trainedBoost } }) {
        box->blockSignals(true);
        box->setValue(value);
        box->blockSignals(false);
    }
    m_variantPause->stop();
}

void AttentionControls::setLayer(int layer)
{
    m_layer->blockSignals(true);
    m_layer->setValue(layer);
    m_layer->blockSignals(false);
}

void AttentionControls::setHead(HeadChoice head)
{
    const int index = m_head->findData(headNumber(head));
    if (index < 0 || index == m_head->currentIndex())
        return;
    m_head->blockSignals(true);
    m_head->setCurrentIndex(index);
    m_head->blockSignals(false);
    m_fusion->setEnabled(head.view == HeadView::Rollout);
    m_discard->setEnabled(head.view == HeadView::Rollout);
    m_class->setEnabled(head.isRelevance());
}

void AttentionControls::setQueryText(const QString& text) { m_query->setText(text); }
QString AttentionControls::queryText() const { return m_query->text(); }

void AttentionControls::setVariantValues(double lambda, double boost)
{
    m_lambda->setValue(lambda);
    m_boost->setValue(boost);
}

void AttentionControls::setPerturbation(const Perturbation& perturbation)
{
    for (int i = 0; i < int(std::size(kNoiseKinds)); ++i)
        if (kNoiseKinds[i].kind == perturbation.kind) {
            m_noiseKind->setCurrentIndex(i);
            m_noiseStrength->setValue(perturbation.strength);
        }
}

int AttentionControls::layer() const { return m_layer->value(); }

void AttentionControls::setRollout(const RolloutOptions& rollout)
{
    const QSignalBlocker fusion(m_fusion), discard(m_discard);
    m_fusion->setCurrentIndex(m_fusion->findData(int(rollout.fusion)));
    m_discard->setValue(rollout.discard);
}

RolloutOptions AttentionControls::rollout() const
{
    return { HeadFusion(m_fusion->currentData().toInt()), m_discard->value() };
}

void AttentionControls::setClasses(const QStringList& labels)
{
    m_class->blockSignals(true);
    m_class->clear();
    m_class->addItem(tr("predicted class"), -1);
    for (int c = 0; c < labels.size(); ++c)
        m_class->addItem(QStringLiteral("%1 %2").arg(c).arg(labels[c]), c);
    m_class->blockSignals(false);
}

void AttentionControls::setInputSize(int height, int width, int trainedHeight, int trainedWidth)
{
    m_inputSize->setPlaceholderText(tr("%1,%2 (as trained)").arg(trainedHeight).arg(trainedWidth));
    m_inputSize->setText(height == trainedHeight && width == trainedWidth ? QString() : QStringLiteral("%1,%2").arg(height).arg(width));
    m_inputSize->setStyleSheet(QString());
}

int AttentionControls::relevanceClass() const { return m_class->currentIndex() < 0 ? -1 : m_class->currentData().toInt(); }

void AttentionControls::setRelevanceClass(int label)
{
    const int index = m_class->findData(label);
    const QSignalBlocker blocker(m_class);
    m_class->setCurrentIndex(index < 0 ? 0 : index);
}

HeadChoice AttentionControls::head() const
{
    return m_head->currentIndex() < 0 ? HeadChoice() : headFromNumber(m_head->currentData().toInt()).value_or(HeadChoice());
}

std::optional<ModelSlot::Variant> AttentionControls::variant() const
{
    if (m_lambda->value() == m_trainedLambda && m_boost->value() == m_trainedBoost)
        return std::nullopt;
    return ModelSlot::Variant { m_lambda->value(), m_boost->value() };
}

Perturbation AttentionControls::perturbation() const
{
    const NoiseKind& k = noiseKind(m_noiseKind->currentIndex());
    Perturbation p;
    p.kind = k.kind;
    p.strength = m_noiseStrength->value();
    return p;
}
