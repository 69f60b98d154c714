/* placeholder: filled by the threads issue work */
typedef int canopy_placeholder_plan_;
