// TrainingSettingsPanel: the optimizer and schedule side of a run (epochs, step limit, batch,
// learning rate, optimizer and its settings, schedule, gradient clipping, seed, threads,
// statistics and evaluation cadence). It edits a TrainConfig and shows TrainConfig's own
// validation message inline, so what the panel shows is what the trainer will accept.
#pragma once
#include <QString>
#include <QWidget>

#include "core/train/train_config.h"

class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QSpinBox;
class QCheckBox;

namespace mpwb {

class TrainingSettingsPanel : public QWidget {
    Q_OBJECT
public:
    explicit TrainingSettingsPanel(QWidget* parent = nullptr);

    // The panel's fields written over config (dataset, precision and scaler stay as given).
    TrainConfig applyTo(TrainConfig config) const;
    void setFromConfig(const TrainConfig& config);
    // Empty when the fields are valid (OptimizerConfig/ScheduleConfig validate()); else the message.
    QString errorText() const { return error_; }

signals:
    void settingsChanged();

private:
    void onChanged();
    void updateEnabled();

    bool loading_ = false;
    QString error_;
    QSpinBox* epochs_ = nullptr;
    QSpinBox* max_steps_ = nullptr;
    QSpinBox* batch_ = nullptr;
    QLineEdit* lr_ = nullptr;
    QComboBox* optimizer_ = nullptr;
    QDoubleSpinBox* momentum_ = nullptr;
    QCheckBox* nesterov_ = nullptr;
    QLineEdit* weight_decay_ = nullptr;
    QComboBox* schedule_ = nullptr;
    QSpinBox* step_size_ = nullptr;
    QDoubleSpinBox* gamma_ = nullptr;
    QSpinBox* warmup_ = nullptr;
    QDoubleSpinBox* clip_ = nullptr;
    QSpinBox* seed_ = nullptr;
    QSpinBox* threads_ = nullptr;
    QSpinBox* stats_every_ = nullptr;
    QSpinBox* eval_every_ = nullptr;
    QLabel* error_label_ = nullptr;
};

}  // namespace mpwb
