# Sourced by scripts/bine_paper_run.sh and bine_paper_seeds.sh: one simulated campaign of
# the Bine paper's reproduction, its host time (GNU time: wall, user, sys) appended to
# $out/host-time.txt under LABEL, its output in $out/LOG. Needs $collkit and $out.
#
#   bine_campaign LABEL SPEC PLATFORM CAMPAIGN_DIR LOG
bine_campaign() {
    local label=$1 spec=$2 platform=$3 dir=$4 log=$5 wall user sys
    echo "== $label $(date -u +%T)"
    /usr/bin/time -o "$out/time.tmp" -f "%e %U %S" \
        "$collkit" run "$spec" --platform "$platform" --out "$dir" > "$out/$log" 2>&1 ||
        { echo "failed: see $out/$log" >&2; exit 1; }
    read -r wall user sys < "$out/time.tmp"
    rm -f "$out/time.tmp"
    echo "$label wall_s=$wall user_s=$user sys_s=$sys" | tee -a "$out/host-time.txt"
}
