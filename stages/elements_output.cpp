// The elements whose results leave the frame: `track` (ids for detections)
// and the message sinks (mqtt, kafka).
#include "neat/stages/elements.hpp"
#include "neat/stages/internal/element_helpers.hpp"
#include "neat/stages/track.hpp"

namespace neat {

namespace {

using R = ElementRole;
using T = PropertyType;

void add_track(std::vector<ElementSpec>& r) {
  const TrackerParams d;
  auto text = [](float v) {
    std::string s = std::to_string(v);
    return s.substr(0, s.find_last_not_of('0') + 1);
  };
  r.push_back(
      {"track",
       {R::Stage},
       "tracks the yolo stage's detections, one ByteTrack-style tracker per stream: f32 [N, 6] "
       "in, f32 [M, 7] out (the detections of confirmed tracks plus their track id)",
       {prop("high", T::Number, text(d.high),
             "detections at least this score are matched first and may start tracks"),
        prop("low", T::Number, text(d.low),
             "weaker detections down to this score keep a track alive (an occluded object)"),
        prop("new", T::Number, text(d.new_track),
             "a detection left over at least this score "
             "starts a track"),
        prop("iou", T::Number, text(d.match_iou), "the overlap a detection needs with a track"),
        prop("max-age", T::Integer, std::to_string(d.max_age),
             "frames a lost track waits for its object before it ends"),
        prop("min-hits", T::Integer, std::to_string(d.min_hits),
             "frames in a row that confirm a new track (at once on a stream's first frame)"),
        prop("classes", T::Choice, "separate", "a track takes detections of its own class, or any",
             {"separate", "any"})},
       [](ElementArgs& a, ElementRole) -> Result<BuiltElement> {
         TrackOptions o;
         TrackerParams& p = o.tracker;
         NEAT_ASSIGN_OR_RETURN(p.high, a.number("high", p.high));
         NEAT_ASSIGN_OR_RETURN(p.low, a.number("low", p.low));
         NEAT_ASSIGN_OR_RETURN(p.new_track, a.number("new", p.new_track));
         NEAT_ASSIGN_OR_RETURN(p.match_iou, a.number("iou", p.match_iou));
         NEAT_ASSIGN_OR_RETURN(std::int64_t age, a.integer("max-age", p.max_age));
         NEAT_ASSIGN_OR_RETURN(std::int64_t hits, a.integer("min-hits", p.min_hits));
         if (age < 1 || age > 100000) return a.fail("max-age must be from 1 to 100000 frames");
         if (hits < 1 || hits > 1000) return a.fail("min-hits must be from 1 to 1000 frames");
         p.max_age = static_cast<int>(age);
         p.min_hits = static_cast<int>(hits);
         NEAT_ASSIGN_OR_RETURN(
             p.per_class, a.choice<bool>("classes", true, {{"separate", true}, {"any", false}}));
         o.journal = a.options().tracks;
         auto st = track_stage(std::move(o));
         if (!st.ok()) return a.fail(st.error());
         BuiltElement e;
         e.stage = std::move(*st);
         return e;
       }});
}

}  // namespace

void add_output_elements(std::vector<ElementSpec>& r) {
  add_track(r);
}

}  // namespace neat
