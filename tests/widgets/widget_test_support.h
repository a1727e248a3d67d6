// What the widget tests share: finding a named child widget, which must be there (a missing one
// ends the test at once, naming it, instead of a null pointer crash later).
#pragma once
#include <QString>
#include <QWidget>
#include <QtGlobal>

template <typename T>
T* child(QWidget* w, const QString& name) {
    T* c = w->findChild<T*>(name);
    if (!c) qFatal("no child %s", qPrintable(name));
    return c;
}
