// Real jobs for end-to-end tests: tools run as processes, 2x2 jobs through run_job.sh.
#pragma once

#include <string>
#include <vector>

namespace oar {

/// Runs a shell command and requires it to exit 0; returns its stdout and stderr.
std::string run(const std::string &cmd);
/// Runs a shell command that must fail (exit non-zero); returns its stdout and stderr.
std::string runFailing(const std::string &cmd);
/// The lines of `output` that hold "error:", joined by newlines.
std::string errorLines(const std::string &output);

/// Writes a model with oar-model; `args` are its flags.
void makeModel(const std::string &dir, const std::string &args);

/// fit_a_line on UCI housing (linear 13 -> 1, SGD) with the given hyper-parameter flags.
void makeFitALine(const std::string &dir, const std::string &args);

/// Runs test/runtime/run_job.sh (2 pservers, 2 trainers on free ports), killing `victim`
/// `after` seconds in; returns its "<node> <exit status>" lines. Logs go to `out`; the pservers'
/// ports go to `portsOut` when given.
/// `convention` (paddle1, paddle2, tf, pslite, mindspore) is how the nodes learn their roles
/// (run_job.sh says how); `env` prefixes the command (RESTART_AFTER=S restarts the victim).
std::string runJob(const std::string &model, const std::string &out, const std::string &victim,
                   const std::string &after, const std::string &flags,
                   std::vector<int> *portsOut = nullptr, const std::string &convention = "paddle1",
                   const std::string &env = "");

/// Why this test cannot run tool `tool` (in binDir()) as user nobody through setpriv, or "" when
/// it can: that needs root, setpriv, the commands in `alsoNeeds`, and folders above the tool
/// open to others.
std::string whyNobodyCannotRun(const std::string &tool,
                               const std::vector<std::string> &alsoNeeds = {});

} // namespace oar
