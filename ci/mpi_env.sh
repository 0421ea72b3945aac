# Sourced by the ci scripts: lets Open MPI run as root in containers and CI.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# No RDMA here: keep Open MPI from probing for it on every start.
export OMPI_MCA_btl=self,vader OMPI_MCA_pml=ob1
