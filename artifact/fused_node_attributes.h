// The attributes of a fused "stitchopt" node in model.fused.onnx: one typed schema for
// the writer (driver/compile.cc builds them, emit/fused_model.h puts them on the node)
// and the reader (runtime_stub/program.cc).
//
// A fused node carries, in this order (the order is part of the output's bytes):
//   kernel               string   the kernel name (shared by identical groups)
//   category             string   GroupCategory ("elementwise", "library"...;
//                                 artifact/group_category.h)
//   library, epilogue    string, strings   library groups only: the typed
//                                 LibraryEpilogue the planner decided, written and
//                                 read by artifact/library_epilogue.h
//   source, grid, block, composition, template   string, int, int, string, string
//                                 only when the group has generated code
//   predicted_time_us    float
//   shared_memory_bytes  int
//   fused_nodes          strings  the names of the nodes the group stands for
//
// Header-only; the epilogue's names are artifact/library_epilogue.cc's (stitch_artifact).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "artifact/group_category.h"
#include "artifact/library_epilogue.h"
#include "ir/core/graph.h"
#include "ir/core/status.h"

namespace stitch::artifact {

struct FusedNodeAttributes {
  // The generated kernel's launch data, as the emitter decided it.
  struct Codegen {
    std::string source;  // "kernels/<file>.cu", relative to the output directory
    int64_t grid = 1;
    int64_t block = 0;
    std::string composition;
    std::string template_text;
    bool operator==(const Codegen& other) const = default;
  };

  std::string kernel;
  GroupCategory category = GroupCategory::kElementwise;
  std::optional<LibraryEpilogue> epilogue;  // kLibrary only, and then always set
  std::optional<Codegen> codegen;
  float predicted_time_us = 0;
  int64_t shared_memory_bytes = 0;
  std::vector<std::string> fused_nodes;

  bool operator==(const FusedNodeAttributes& other) const = default;

  std::vector<ir::Attribute> to_attributes() const {
    std::vector<ir::Attribute> attributes = {
        ir::Attribute::make_string("kernel", kernel),
        ir::Attribute::make_string("category", std::string(to_string(category)))};
    if (category == GroupCategory::kLibrary) {
      STITCH_CHECK(epilogue.has_value()) << "library group " << kernel << " without its epilogue";
      for (ir::Attribute& attribute : epilogue_attributes(*epilogue)) {
        attributes.push_back(std::move(attribute));
      }
    }
    if (codegen) {
      attributes.push_back(ir::Attribute::make_string("source", codegen->source));
      attributes.push_back(ir::Attribute::make_int("grid", codegen->grid));
      attributes.push_back(ir::Attribute::make_int("block", codegen->block));
      attributes.push_back(ir::Attribute::make_string("composition", codegen->composition));
      attributes.push_back(ir::Attribute::make_string("template", codegen->template_text));
    }
    attributes.push_back(ir::Attribute::make_float("predicted_time_us", predicted_time_us));
    attributes.push_back(ir::Attribute::make_int("shared_memory_bytes", shared_memory_bytes));
    attributes.push_back(ir::Attribute::make_strings("fused_nodes", fused_nodes));
    return attributes;
  }

  // Reads the schema back from a fused node. A missing "kernel" is the node's
  // op_type (the writer makes them equal); a missing or unknown category, an
  // attribute of the wrong kind, or a library group without a library and epilogue
  // that artifact/library_epilogue.h reads, is an error naming the node.
  static Result<FusedNodeAttributes> from_node(const ir::Node& node) {
    auto error = [&](const std::string& what) {
      return Status::invalid_input("fused node " + node.display_name() + ": " + what +
                                   "; recompile the model");
    };
    auto find = [&](const char* name, ir::AttributeKind kind) -> Result<const ir::Attribute*> {
      const ir::Attribute* attribute = node.find_attribute(name);
      if (attribute != nullptr && attribute->kind != kind) {
        return error(std::string("attribute \"") + name + "\" has the wrong type");
      }
      return attribute;
    };
    FusedNodeAttributes attributes;
    STITCH_ASSIGN_OR_RETURN(const ir::Attribute* kernel,
                            find("kernel", ir::AttributeKind::kString));
    attributes.kernel = kernel != nullptr ? kernel->s : node.op_type;
    STITCH_ASSIGN_OR_RETURN(const ir::Attribute* category,
                            find("category", ir::AttributeKind::kString));
    if (category == nullptr) return error("no \"category\" attribute");
    std::optional<GroupCategory> parsed = parse_group_category(category->s);
    if (!parsed) return error("unknown category \"" + category->s + "\"");
    attributes.category = *parsed;
    if (attributes.category == GroupCategory::kLibrary) {
      STITCH_ASSIGN_OR_RETURN(attributes.epilogue, read_epilogue_attributes(node));
    }
    STITCH_ASSIGN_OR_RETURN(const ir::Attribute* source,
                            find("source", ir::AttributeKind::kString));
    if (source != nullptr) {
      Codegen codegen;
      codegen.source = source->s;
      STITCH_ASSIGN_OR_RETURN(const ir::Attribute* grid, find("grid", ir::AttributeKind::kInt));
      STITCH_ASSIGN_OR_RETURN(const ir::Attribute* block, find("block", ir::AttributeKind::kInt));
      STITCH_ASSIGN_OR_RETURN(const ir::Attribute* composition,
                              find("composition", ir::AttributeKind::kString));
      STITCH_ASSIGN_OR_RETURN(const ir::Attribute* text,
                              find("template", ir::AttributeKind::kString));
      if (grid == nullptr || block == nullptr || composition == nullptr || text == nullptr) {
        return error("\"source\" without grid, block, composition and template");
      }
      codegen.grid = grid->i;
      codegen.block = block->i;
      codegen.composition = composition->s;
      codegen.template_text = text->s;
      attributes.codegen = std::move(codegen);
    }
    STITCH_ASSIGN_OR_RETURN(const ir::Attribute* time,
                            find("predicted_time_us", ir::AttributeKind::kFloat));
    if (time != nullptr) attributes.predicted_time_us = time->f;
    STITCH_ASSIGN_OR_RETURN(const ir::Attribute* shared,
                            find("shared_memory_bytes", ir::AttributeKind::kInt));
    if (shared != nullptr) attributes.shared_memory_bytes = shared->i;
    STITCH_ASSIGN_OR_RETURN(const ir::Attribute* nodes,
                            find("fused_nodes", ir::AttributeKind::kStrings));
    if (nodes != nullptr) attributes.fused_nodes = nodes->strings;
    return attributes;
  }
};

}  // namespace stitch::artifact
