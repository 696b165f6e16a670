// Shared by the files that fill the element registry (elements.cpp,
// elements_output.cpp): property declarations and the registry's parts.
#pragma once

#include <string>
#include <vector>

#include "neat/stages/elements.hpp"

namespace neat {

/// An optional property with its default (as text) and help.
PropertySpec prop(std::string name, PropertyType type, std::string default_value, std::string help,
                  std::vector<std::string> choices = {});
/// A property the element needs; `placeholder` names its value ("PATH").
PropertySpec required(std::string name, PropertyType type, std::string placeholder,
                      std::string help, std::vector<std::string> choices = {});

/// The stages that follow detection: track.
void add_output_stages(std::vector<ElementSpec>& registry);
/// The sinks whose results leave the process: mqtt, kafka.
void add_output_sinks(std::vector<ElementSpec>& registry);

}  // namespace neat
